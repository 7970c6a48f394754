"""A heartbeat entity per listener instance, so status pages and the CLI see live threads.

Each instance upserts one entity (partition = role, row = instance id) holding its latest
:class:`~shared.listener.state.ListenerSnapshot`. Writes are throttled — every
``busy_interval`` seconds while the listener is working, at most every ``idle_interval``
while it is idle (:data:`HEARTBEAT_IDLE_SECONDS`) — so an idle instance costs a dozen
table writes an hour. A reader treats an entity older than a couple of idle intervals, or
with ``status == "stopped"``, as gone. A change of the thread count or of the queue depth
is written early (at most once per ``prompt_interval``), so that readers see threads scale
and queues drain as they happen, not minutes later. Each write is also logged, which gives
the periodic state log for free.

Each entity carries, besides the threads active at that moment, ``peak_active_threads``:
the most active at once over the last ``peak_hold`` seconds (:data:`PEAK_HOLD_SECONDS`), and
at least since the previous entity. Threads that start and retire between two beats show
there. The hold is there for readers that sample slower than the prompt beats (the
dashboard samples every 2 s, the beats can come every second): a peak followed at once by
a lower one would otherwise be gone before they look. When the hold expires the lower peak
is a change of shape, written promptly, so a reader sees the peak come back down too.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from shared.listener.state import LATENCY_BUCKETS_SECONDS, ListenerSnapshot, ListenerState
from shared.storage.ports import Entity, Table

log = logging.getLogger(__name__)

#: An idle instance's heartbeat interval: 12 writes an hour, a fifth of an idle processor's
#: request budget; readers wait a couple of these before calling an instance gone.
HEARTBEAT_IDLE_SECONDS = 300.0
#: How long an entity keeps showing a peak of threads: three of the dashboard sampler's
#: 2-second intervals, so a sample that comes late still sees it.
PEAK_HOLD_SECONDS = 6.0


def new_instance_id() -> str:
    """``hostname-pid-random``: unique per process, readable in a status table."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Heartbeat:
    """Writes the listener's snapshot to ``table``, throttled; a thread drives it."""

    def __init__(
        self,
        table: Table,
        state: ListenerState,
        *,
        role: str,
        instance_id: str | None = None,
        busy_interval: float = 10.0,
        idle_interval: float = HEARTBEAT_IDLE_SECONDS,
        prompt_interval: float = 1.0,
        peak_hold: float = PEAK_HOLD_SECONDS,
        extra: Callable[[], Mapping[str, Any]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``extra`` adds the owner's own figures (table property values) to every entity."""
        self.table = table
        self.role = role
        self.instance_id = instance_id or new_instance_id()
        self._state = state
        self._busy_interval = busy_interval
        self._idle_interval = idle_interval
        self._prompt_interval = prompt_interval
        self._peak_hold = peak_hold
        self._extra = extra
        self._clock = clock
        self._started_at = datetime.now(UTC)
        self._last_write: float | None = None
        self._last_progress: tuple[int, int, int] | None = None
        self._last_shape: tuple[int, int, int, int] | None = None
        self._unwritten_peak = 0  # taken for a write that failed: the next write carries it
        self._taken_peaks: deque[tuple[float, int]] = deque()  # (when, peak), within the hold
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{role}", daemon=True)

    def start(self) -> None:
        try:
            self.table.create()
        except Exception:  # provisioning made it; if not, the writes say so, the work goes on
            log.warning("could not make sure the heartbeats table exists", exc_info=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and write a last entity marked ``stopped``."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        self._write(self._state.snapshot(), status="stopped")

    def beat_if_due(self) -> bool:
        """Write now if the throttle allows; True if an entity was written."""
        snapshot = self._state.snapshot()
        now = self._clock()
        held = self._held_peak(now, snapshot.peak_active_threads)
        snapshot = snapshot.model_copy(update={"peak_active_threads": held})
        progress = (snapshot.handled, snapshot.errors, snapshot.poisoned)
        busy = snapshot.in_flight > 0 or progress != self._last_progress
        interval = self._busy_interval if busy else self._idle_interval
        if _shape(snapshot) != self._last_shape:
            interval = min(interval, self._prompt_interval)
        if self._last_write is not None and now - self._last_write < interval:
            return False
        self._last_progress = progress
        return self._write(snapshot, status="running")

    def entity(self, snapshot: ListenerSnapshot, status: str) -> Entity:
        properties: dict[str, Any] = {
            "role": self.role,
            "status": status,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": self._started_at,
            "taken_at": snapshot.taken_at,
            "queue_depth": snapshot.queue_depth,
            "queue_depths": json.dumps(snapshot.queue_depths, sort_keys=True),
            "active_threads": snapshot.active_threads,
            "peak_active_threads": snapshot.peak_active_threads,
            "total_threads": snapshot.total_threads,
            "retired_threads": snapshot.retired_threads,
            "in_flight": snapshot.in_flight,
            "handled": snapshot.handled,
            "errors": snapshot.errors,
            "poisoned": snapshot.poisoned,
            "renewals": snapshot.renewals,
            "safety_poll_only": snapshot.safety_poll_only,
        }
        # Tables cannot store null: a latency not measured yet is simply absent.
        if snapshot.last_latency_ms is not None:
            properties["last_latency_ms"] = snapshot.last_latency_ms
        if snapshot.p95_latency_ms is not None:
            properties["p95_latency_ms"] = snapshot.p95_latency_ms
        # A table property holds no list: the histogram as JSON, with its bounds.
        properties["latency_histogram"] = json.dumps(
            {
                "le": list(LATENCY_BUCKETS_SECONDS),
                "counts": list(snapshot.latency_bucket_counts),
                "sum": snapshot.latency_sum_seconds,
            }
        )
        if self._extra is not None:
            properties.update(self._extra())
        return Entity(partition_key=self.role, row_key=self.instance_id, properties=properties)

    def _held_peak(self, now: float, fresh: int) -> int:
        """The most threads active at once within the hold: ``fresh`` (since the peak was
        last taken), the peaks taken for the entities of the last ``peak_hold`` seconds, and
        one that a failed write could not carry."""
        while self._taken_peaks and now - self._taken_peaks[0][0] >= self._peak_hold:
            self._taken_peaks.popleft()
        return max([fresh, self._unwritten_peak, *(peak for _, peak in self._taken_peaks)])

    def _write(self, snapshot: ListenerSnapshot, status: str) -> bool:
        # The peak since the previous entity is taken (and restarted) for this one, and held.
        now = self._clock()
        taken = self._state.take_peak_active()
        peak = self._held_peak(now, taken)
        self._taken_peaks.append((now, taken))
        snapshot = snapshot.model_copy(update={"peak_active_threads": peak})
        try:
            self.table.upsert(self.entity(snapshot, status))
        except Exception:  # a missed heartbeat must never stop the work
            log.warning("heartbeat of %s failed", self.instance_id, exc_info=True)
            self._unwritten_peak = peak
            return False
        self._unwritten_peak = 0
        self._last_write = self._clock()
        self._last_shape = _shape(snapshot)
        log.info(
            "%s %s: %d threads (peak %d), depth %d, handled %d, errors %d, poisoned %d, p95 %s ms",
            self.role,
            self.instance_id,
            snapshot.active_threads,
            snapshot.peak_active_threads,
            snapshot.queue_depth,
            snapshot.handled,
            snapshot.errors,
            snapshot.poisoned,
            f"{snapshot.p95_latency_ms:.1f}" if snapshot.p95_latency_ms is not None else "-",
        )
        return True

    def _run(self) -> None:
        self.beat_if_due()
        # Checking is free (no request); only writes cost. Check often enough for busy beats.
        check_every = min(self._busy_interval, self._idle_interval, self._prompt_interval)
        while not self._stopping.wait(check_every):
            self.beat_if_due()


def _shape(snapshot: ListenerSnapshot) -> tuple[int, int, int, int]:
    """What a reader should see change at once: the threads (with their peak) and the depth."""
    return (
        snapshot.active_threads,
        snapshot.peak_active_threads,
        snapshot.total_threads,
        snapshot.queue_depth,
    )
