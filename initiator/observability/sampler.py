"""The one sampler behind the dashboard's charts: a thread in the initiator.

Every :data:`SAMPLE_SECONDS` it takes the processors and batches from the shared cached
readings, queries the depth of the queues whose depth can have changed (one request each,
a few at a time; see :meth:`Sampler._due`), computes the rates and appends a
:class:`~initiator.observability.history.Sample` to the ring. Its requests are counted as
the dashboard's (``queue.count@dashboard``, :func:`shared.meter.on_behalf_of`). It does
so only while someone watches — a poll of the live endpoint in the last
:data:`WATCH_SECONDS` — so the storage requests are one sampler's worth however many
dashboards and ``billing top`` are open, and none when nobody looks. The history therefore
covers the time someone was watching, up to the ring's window.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from initiator.observability.batches import BatchOverview
from initiator.observability.fleet import ProcessorInstance
from initiator.observability.history import WINDOW_SECONDS, HistoryRing, ProcessorThreads, Sample
from initiator.observability.rates import (
    AppliedRate,
    CostEstimate,
    RatedRate,
    RequestRate,
    no_prices,
)
from initiator.observability.readings import Readings
from shared import meter
from shared.contracts.batch_status import OPEN_STATUSES, UNFINISHED_INTAKE
from shared.listener.source import poison_queue
from shared.storage.ports import Queue

log = logging.getLogger(__name__)

#: Batches that are still putting chunks on the queues or taking them off.
_OPEN = frozenset({*UNFINISHED_INTAKE, *OPEN_STATUSES})
POISON_SUFFIX = poison_queue("")

#: Seconds between samples while watched (the page polls every second).
SAMPLE_SECONDS = 2.0
#: Sampling goes on this long after the last poll.
WATCH_SECONDS = 60.0
#: Depth queries in flight at once (each is one request; Azure answers in tens of ms).
DEPTH_QUERIES_IN_FLIGHT = 8
#: Every queue's depth is asked at least this often while watched; in between, only the
#: depths that can have changed. A poison queue emptied by an operator shows within this.
FULL_RESCAN_SECONDS = 60.0
#: The meter's caller for the sampler's requests.
METER_CALLER = "dashboard"


@dataclass(frozen=True)
class Reading:
    """The latest sample and the batches and processors read with it."""

    sample: Sample
    batches: BatchOverview
    processors: list[ProcessorInstance]
    gate_released: bool = True


class Sampler:
    def __init__(
        self,
        queues: list[Queue],
        readings: Readings,
        *,
        interval: float = SAMPLE_SECONDS,
        watch_seconds: float = WATCH_SECONDS,
        window_seconds: float = WINDOW_SECONDS,
        rescan_seconds: float = FULL_RESCAN_SECONDS,
        cost: CostEstimate = no_prices,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.window_seconds = window_seconds
        self.ring = HistoryRing(capacity=max(int(window_seconds / interval), 1))
        self._queues = queues
        self._readings = readings
        self._watch_seconds = watch_seconds
        self._rescan_seconds = rescan_seconds
        self._rescanned_at: float | None = None
        self._depths: dict[str, int] = {}
        self._beats: dict[str, tuple[datetime, int]] = {}  # instance → (beat time, poisoned)
        self._cost = cost
        self._clock = clock
        self._rated = RatedRate()
        self._applied = AppliedRate()
        self._requests = RequestRate()
        self._own_process = (socket.gethostname(), os.getpid())
        self._watched_at: float | None = None
        self._latest: Reading | None = None
        self._lock = threading.Lock()
        self._sampled = threading.Condition(self._lock)
        self._sampling = threading.Lock()  # one sample at a time: numbers stay in order
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._pool = ThreadPoolExecutor(DEPTH_QUERIES_IN_FLIGHT, "depth-query")
        self._thread = threading.Thread(target=self._run, name="dashboard-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self._pool.shutdown(wait=True)

    def watched(self, *, wait: float = 10.0) -> Reading | None:
        """A viewer polls: keep sampling, and return the latest reading. After an unwatched
        spell the last reading is old: wait up to ``wait`` seconds for a new one."""
        with self._lock:
            idle = not self._is_watched()
            self._watched_at = self._clock()
            wanted = self.ring.next_seq() if idle else 0
        if idle:
            self._wake.set()
        with self._sampled:
            self._sampled.wait_for(
                lambda: self._latest is not None and self._latest.sample.seq >= wanted,
                timeout=wait,
            )
            return self._latest

    def sample_once(self) -> Reading:
        """Take one sample now and append it (the thread's step; tests call it directly)."""
        with self._sampling, meter.on_behalf_of(METER_CALLER):
            return self._sample()

    def _sample(self) -> Reading:
        now = datetime.now(UTC)
        batches = self._readings.batches()
        processors = self._readings.processors()
        due = self._due(batches, processors)
        self._depths.update(zip([q.name for q in due], self._pool.map(_depth, due), strict=True))
        depths = {q.name: self._depths.get(q.name, 0) for q in self._queues}
        requests = self._requests.update(self._request_counts(processors), now)
        sample = Sample(
            seq=self.ring.next_seq(),
            taken_at=now,
            queue_depths=depths,
            processors=[
                ProcessorThreads(
                    instance=p.instance,
                    active=p.active_threads,
                    peak_active=p.peak_active_threads,
                    total=p.total_threads,
                    queue_depth=p.queue_depth,
                    beat_age_seconds=p.beat_age_seconds,
                )
                for p in processors
            ],
            rated_per_second=self._rated.update(processors, now),
            applied_per_second=self._applied.update(batches.recent, now),
            requests_per_minute=requests,
            cost_per_minute=self._cost(requests),
        )
        self.ring.append(sample)
        reading = Reading(sample, batches, processors, self._readings.gate().released)
        with self._sampled:
            self._latest = reading
            self._sampled.notify_all()
        return reading

    def _due(self, batches: BatchOverview, processors: list[ProcessorInstance]) -> list[Queue]:
        """The queues whose depth can have changed since the last sample: all of them on a
        full rescan (the first sample, then every ``rescan_seconds``). Between rescans a
        work or results queue is asked while a batch is open, when a processor has beaten
        since (it beats within a second of its queue depth changing) or when its last depth
        was not zero; a poison queue only when a processor's poisoned count moved."""
        beats = {p.instance: (p.taken_at, p.poisoned) for p in processors}
        now = datetime.now(UTC)
        previous, self._beats = self._beats, beats
        clock = self._clock()
        if self._rescanned_at is None or clock - self._rescanned_at >= self._rescan_seconds:
            self._rescanned_at = clock
            return list(self._queues)
        open_batch = any(batches.counts.get(status, 0) for status in _OPEN)
        new_beat = beats != previous
        # A processor seen for the first time has poisoned nothing since the last sample
        # unless its count says so.
        poisoned = any(n != previous.get(i, (now, 0))[1] for i, (_, n) in beats.items())
        return [
            queue
            for queue in self._queues
            if (
                poisoned
                if queue.name.endswith(POISON_SUFFIX)
                else open_batch or new_beat or self._depths.get(queue.name, 0) > 0
            )
        ]

    def _request_counts(
        self, processors: list[ProcessorInstance]
    ) -> dict[Hashable, Mapping[str, int]]:
        """This process's meter, and each other process's counts from its newest heartbeat
        (several instances in one process share one meter: counted once)."""
        counts: dict[Hashable, Mapping[str, int]] = {self._own_process: meter.snapshot()}
        for processor in sorted(processors, key=lambda p: p.taken_at):
            process = (processor.host, processor.pid)
            if process != self._own_process and processor.storage_requests:
                counts[process] = processor.storage_requests
        return counts

    def _is_watched(self) -> bool:
        return (
            self._watched_at is not None and self._clock() - self._watched_at <= self._watch_seconds
        )

    def _run(self) -> None:
        while not self._stopping.is_set():
            with self._lock:
                watched = self._is_watched()
            if not watched:
                self._rescanned_at = None  # a new viewer's first sample asks every queue
                self._wake.wait()  # no viewer: no requests until one polls
                self._wake.clear()
                continue
            started = self._clock()
            try:
                self.sample_once()
            except Exception:  # storage down: the next sample tries again
                log.warning("dashboard sample failed", exc_info=True)
            self._stopping.wait(max(self.interval - (self._clock() - started), 0.0))


def _depth(queue: Queue) -> int:
    # A pool thread: the caller's context does not follow it there.
    with meter.on_behalf_of(METER_CALLER):
        return queue.approximate_count()
