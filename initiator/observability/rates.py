"""Per-second and per-minute rates from counters that only ever grow.

Each tracker is fed one reading per sample and answers a rate. They live in the one sampler
(:mod:`initiator.observability.sampler`), so they see every reading in order.

* :class:`RatedRate`: transactions rated per second, from the growth of the processors'
  heartbeat counters between two samples (a beat comes every 10 s while busy, and within a
  second when its threads or its queue depth change), so the series follows the rating.
* :class:`AppliedRate`: transactions applied per second, from the batch records' chunk
  counts (the controller updates them after every chunk).
* :class:`RequestRate`: storage requests per minute by kind, summed over processes; each
  process's counters are diffed with its own previous reading, so a process that starts
  or stops never shows as a negative rate.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from initiator.observability.fleet import ProcessorInstance
from initiator.schemas import BatchStatusView

#: Requests are summed over this window.
REQUEST_WINDOW = timedelta(minutes=1)

#: Storage requests per minute by kind → an estimated cost per minute, or None when unknown.
CostEstimate = Callable[[Mapping[str, float]], float | None]


def no_prices(requests_per_minute: Mapping[str, float]) -> float | None:
    """The cost hook when no prices are given; the app plugs in the list prices of
    :mod:`shared.cost.prices` (see :func:`initiator.observability.start.start_sampler`)."""
    return None


class RatedRate:
    """Transactions rated per second between two of the sampler's own readings.

    Each heartbeat carries its instance's cumulative count; what grew since the previous
    sample is rated in the time since that sample, so the series rises in the sample that
    first sees a chunk rated and falls to zero in the first sample without new ratings,
    rather than repeating a rate measured over the beat interval for that long again."""

    def __init__(self) -> None:
        self._rated: dict[str, int] | None = None  # instance → count at the previous sample
        self._at: datetime | None = None

    def update(self, processors: Iterable[ProcessorInstance], now: datetime) -> float:
        counts = {p.instance: p.rated_transactions for p in processors}
        previous, at = self._rated, self._at
        self._rated, self._at = counts, now
        if previous is None or at is None or now <= at:
            return 0.0  # the first reading is the baseline
        grown = 0
        for instance, count in counts.items():
            # An instance unseen at the previous sample started since: all its count is new.
            # A smaller count is a restarted instance: it counts from zero again.
            before = previous.get(instance, 0)
            grown += count - before if count >= before else count
        return grown / (now - at).total_seconds()


def applied_transactions(batch: BatchStatusView) -> float:
    """Transactions applied so far, estimated: every chunk but the last is full."""
    if batch.chunks.total == 0:
        return 0.0
    return batch.transactions * batch.chunks.applied / batch.chunks.total


class AppliedRate:
    def __init__(self) -> None:
        self._read: Sequence[BatchStatusView] | None = None
        self._applied: dict[str, float] | None = None
        self._at: datetime | None = None
        self._rate = 0.0

    def update(self, batches: Sequence[BatchStatusView], now: datetime) -> float:
        """``batches``: the cached reading; the same list again (not re-read yet) keeps the
        last rate rather than showing a zero and then twice the rate."""
        if batches is self._read:
            return self._rate
        applied = {batch.batch_id: applied_transactions(batch) for batch in batches}
        previous, at = self._applied, self._at
        self._read, self._applied, self._at = batches, applied, now
        if previous is None or at is None or now <= at:
            self._rate = 0.0
            return self._rate
        grown = sum(
            max(value - previous.get(batch_id, 0.0), 0.0) for batch_id, value in applied.items()
        )
        self._rate = grown / (now - at).total_seconds()
        return self._rate


class RequestRate:
    def __init__(self) -> None:
        self._last: dict[Hashable, Mapping[str, int]] = {}
        self._window: deque[tuple[datetime, Counter[str]]] = deque()
        self._started: datetime | None = None

    def update(
        self, counts: Mapping[Hashable, Mapping[str, int]], now: datetime
    ) -> dict[str, float]:
        """``counts``: each process's cumulative requests by kind. Returns requests per minute."""
        grown: Counter[str] = Counter()
        for source, kinds in counts.items():
            before = self._last.get(source)
            if before is not None:
                for kind, count in kinds.items():
                    # A smaller count is a restarted process: it counts from zero again.
                    grown[kind] += (
                        count - before.get(kind, 0) if count >= before.get(kind, 0) else count
                    )
        self._last = dict(counts)
        self._started = self._started or now
        self._window.append((now, grown))
        # Each step covers the time since the one before: keep those ending in the last minute.
        while self._window and now - self._window[0][0] >= REQUEST_WINDOW:
            self._window.popleft()
        total: Counter[str] = Counter()
        for _, step in self._window:
            total.update(step)
        covered = min((now - self._started).total_seconds(), REQUEST_WINDOW.total_seconds())
        if covered <= 0:
            return {}
        scale = REQUEST_WINDOW.total_seconds() / covered
        return {kind: count * scale for kind, count in sorted(total.items()) if count}
