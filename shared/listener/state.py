"""What a listener is doing right now.

The engine updates one :class:`ListenerState` from all its threads; ``snapshot()`` gives a
consistent, immutable :class:`ListenerSnapshot` for logs, ``/metrics``, the heartbeat entity
and tests. Latency percentiles come from a sliding window of the most recent handlings (a
bounded reservoir), so memory stays constant and p95 reflects the current load, not the
whole history; the same latencies are also counted into fixed buckets since the listener
started (:data:`LATENCY_BUCKETS_SECONDS`), which ``/metrics`` exposes as a Prometheus
histogram (a percentile cannot be aggregated over instances; bucket counts can).

Threads can start and retire between two heartbeats, so the count running now may miss a
whole burst: the state also keeps the peak of active threads since the heartbeat last
took it (:meth:`ListenerState.take_peak_active`), raised where a thread starts, under the
lock that guards the count anyway.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import deque
from collections.abc import Mapping
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

#: how many recent handling latencies the p95 is computed over
LATENCY_WINDOW = 1024
#: upper bounds of the handling-latency buckets, in seconds (a chunk rates in tens of ms)
LATENCY_BUCKETS_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ListenerSnapshot(BaseModel):
    """The listener's state at one moment."""

    model_config = ConfigDict(frozen=True)

    taken_at: datetime
    #: approximate depth per queue, as of the last depth query (work detection, safety poll)
    queue_depths: dict[str, int]
    #: dequeue threads running now, started since start, and retired (idle at the cap)
    active_threads: int
    total_threads: int
    retired_threads: int
    #: the most dequeue threads active at once since the peak was last taken (never below
    #: ``active_threads``); reading a snapshot does not reset it
    peak_active_threads: int
    #: messages received and not yet finished (handled, failed, poisoned or abandoned)
    in_flight: int
    handled: int
    errors: int
    poisoned: int
    renewals: int
    last_latency_ms: float | None
    p95_latency_ms: float | None
    #: handlings per latency bucket since start (one more than the bounds: the last is
    #: above every bound), and the sum of their latencies in seconds
    latency_bucket_counts: tuple[int, ...] = (0,) * (len(LATENCY_BUCKETS_SECONDS) + 1)
    latency_sum_seconds: float = 0.0
    #: no dequeue thread is left; only the slow safety poll watches the queues
    safety_poll_only: bool

    @property
    def queue_depth(self) -> int:
        return sum(self.queue_depths.values())


class ListenerState:
    """Thread-safe counters of one listener."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depths: dict[str, int] = {}
        self._active = 0
        self._peak_active = 0  # since take_peak_active() last reset it
        self._total = 0
        self._retired = 0
        self._in_flight = 0
        self._handled = 0
        self._errors = 0
        self._poisoned = 0
        self._renewals = 0
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._buckets = [0] * (len(LATENCY_BUCKETS_SECONDS) + 1)
        self._latency_sum = 0.0
        self._safety_poll_only = False

    # --- written by the engine ---------------------------------------------------------
    def set_depths(self, depths: Mapping[str, int]) -> None:
        with self._lock:
            self._depths.update(depths)

    def thread_started(self) -> None:
        with self._lock:
            self._active += 1
            self._peak_active = max(self._peak_active, self._active)
            self._total += 1
            self._safety_poll_only = False

    def thread_ended(self, *, retired: bool) -> None:
        with self._lock:
            self._active -= 1
            self._retired += int(retired)

    def set_safety_poll_only(self, value: bool) -> None:
        with self._lock:
            self._safety_poll_only = value

    def received(self, count: int) -> None:
        with self._lock:
            self._in_flight += count

    def finished(self, *, latency_seconds: float | None = None, error: bool = False) -> None:
        """One received message is done with; a latency is recorded when it was handled."""
        with self._lock:
            self._in_flight -= 1
            self._errors += int(error)
            if latency_seconds is not None:
                self._handled += 1
                self._latencies.append(latency_seconds * 1000)
                self._buckets[bisect.bisect_left(LATENCY_BUCKETS_SECONDS, latency_seconds)] += 1
                self._latency_sum += latency_seconds

    def poisoned(self) -> None:
        with self._lock:
            self._poisoned += 1

    def renewed(self) -> None:
        with self._lock:
            self._renewals += 1

    def error(self) -> None:
        """An error outside the handling of one message (a failed receive, say)."""
        with self._lock:
            self._errors += 1

    # --- read by everyone ----------------------------------------------------------------
    @property
    def active_threads(self) -> int:
        with self._lock:
            return self._active

    def take_peak_active(self) -> int:
        """The peak of active threads since the last call, which starts a new one from the
        threads running now (the heartbeat calls it once per beat it writes)."""
        with self._lock:
            peak, self._peak_active = self._peak_active, self._active
            return peak

    def snapshot(self) -> ListenerSnapshot:
        with self._lock:
            latencies = sorted(self._latencies)
            last = self._latencies[-1] if self._latencies else None
            return ListenerSnapshot(
                taken_at=datetime.now(UTC),
                queue_depths=dict(self._depths),
                active_threads=self._active,
                total_threads=self._total,
                retired_threads=self._retired,
                peak_active_threads=self._peak_active,
                in_flight=self._in_flight,
                handled=self._handled,
                errors=self._errors,
                poisoned=self._poisoned,
                renewals=self._renewals,
                last_latency_ms=last,
                p95_latency_ms=_nearest_rank(latencies, 0.95),
                latency_bucket_counts=tuple(self._buckets),
                latency_sum_seconds=self._latency_sum,
                safety_poll_only=self._safety_poll_only,
            )


def _nearest_rank(ordered: list[float], quantile: float) -> float | None:
    """The nearest-rank percentile of an ascending list (None when empty)."""
    if not ordered:
        return None
    rank = max(math.ceil(quantile * len(ordered)), 1)
    return ordered[rank - 1]
