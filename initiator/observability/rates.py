"""Per-second and per-minute rates from counters that only ever grow.

Each tracker is fed one reading per sample and answers a rate. They live in the one sampler
(:mod:`initiator.observability.sampler`), so they see every reading in order.

* :class:`RatedRate`: transactions rated per second, from each processor's heartbeat
  counter between its last two beats (a beat comes every few seconds while busy, and at
  once when its threads change), shown for as long as the interval it was measured over.
* :class:`AppliedRate`: transactions applied per second, from the batch records' chunk
  counts (the controller updates them after every chunk).
* :class:`RequestRate`: storage requests per minute by kind, summed over processes; each
  process's counters are diffed with its own previous reading, so a process that starts
  or stops never shows as a negative rate.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from initiator.observability.fleet import ProcessorInstance
from initiator.schemas import BatchStatusView

#: A processor's rate is believed this long after its last beat (beats come every 10 s busy).
RATE_FRESH_FOR = timedelta(seconds=15)
#: Requests are summed over this window.
REQUEST_WINDOW = timedelta(minutes=1)

#: Storage requests per minute by kind → an estimated cost per minute, or None when unknown.
CostEstimate = Callable[[Mapping[str, float]], float | None]


def no_prices(requests_per_minute: Mapping[str, float]) -> float | None:
    """The cost hook when no prices are given; the app plugs in the list prices of
    :mod:`shared.cost.prices` (see :func:`initiator.observability.start.start_sampler`)."""
    return None


@dataclass(frozen=True)
class _Beat:
    taken_at: datetime
    rated: int


class RatedRate:
    def __init__(self) -> None:
        self._beats: dict[str, tuple[_Beat | None, _Beat]] = {}  # instance → (previous, last)

    def update(self, processors: Iterable[ProcessorInstance], now: datetime) -> float:
        seen: set[str] = set()
        rate = 0.0
        for processor in processors:
            seen.add(processor.instance)
            beat = _Beat(processor.taken_at, processor.rated_transactions)
            previous, last = self._beats.get(processor.instance, (None, beat))
            if beat.taken_at != last.taken_at:
                previous, last = last, beat
            self._beats[processor.instance] = (previous, last)
            if previous is None:
                continue
            seconds = (last.taken_at - previous.taken_at).total_seconds()
            # A rate measured over an interval is shown for about as long again, no longer.
            if now - last.taken_at > min(last.taken_at - previous.taken_at, RATE_FRESH_FOR):
                continue
            if seconds > 0 and last.rated >= previous.rated:
                rate += (last.rated - previous.rated) / seconds
        for gone in set(self._beats) - seen:
            del self._beats[gone]
        return rate


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
