"""The last minutes of the system, one sample every couple of seconds, in a bounded ring.

A :class:`Sample` is what the dashboard's charts plot at one instant: the depth of every
queue, each live processor's dequeue threads, the throughput and the storage requests per
minute. The ring keeps :data:`WINDOW_SECONDS` of them and drops the oldest, so memory stays
constant however long the initiator runs. Samples are numbered; a reader asks for those
after the last number it has, so a poll carries only what is new.
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime

from pydantic import BaseModel, Field

#: How far back the charts look.
WINDOW_SECONDS = 15 * 60


class ProcessorThreads(BaseModel):
    """One processor instance's dequeue threads, as of its last heartbeat."""

    instance: str
    active: int = Field(description="dequeue threads running at the beat")
    peak_active: int = Field(
        description="the most dequeue threads running at once since the instance's previous "
        "beat: what the chart plots, since threads can start and retire between two beats"
    )
    total: int = Field(description="dequeue threads started since the instance started")
    queue_depth: int = Field(description="the depth the instance itself last saw")
    beat_age_seconds: float = Field(description="age of the heartbeat, when sampled")


class Sample(BaseModel):
    seq: int = Field(description="increases by one per sample; ask for those after the last seen")
    taken_at: datetime
    queue_depths: dict[str, int] = Field(
        description="approximate messages per queue (work, poison, results), queried now"
    )
    processors: list[ProcessorThreads]
    rated_per_second: float = Field(description="transactions rated since the previous sample")
    applied_per_second: float = Field(
        description="transactions applied to the warehouse (chunks applied x mean chunk size)"
    )
    requests_per_minute: dict[str, float] = Field(
        description="storage requests by kind over the last minute: this initiator and the "
        "processors (from their heartbeats); the controller is not counted"
    )
    cost_per_minute: float | None = Field(
        default=None, description="the requests' estimated cost; null until prices are known"
    )


class HistoryRing:
    """Thread-safe: one sampler appends, any number of requests read."""

    def __init__(self, capacity: int) -> None:
        self._samples: deque[Sample] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._next_seq = 1

    def next_seq(self) -> int:
        with self._lock:
            return self._next_seq

    def append(self, sample: Sample) -> None:
        with self._lock:
            if sample.seq != self._next_seq:
                raise ValueError(f"sample {sample.seq} out of order (expected {self._next_seq})")
            self._samples.append(sample)
            self._next_seq += 1

    def after(self, seq: int) -> list[Sample]:
        """The samples numbered above ``seq``, oldest first (all of them for 0)."""
        with self._lock:
            return [sample for sample in self._samples if sample.seq > seq]

    def latest(self) -> Sample | None:
        with self._lock:
            return self._samples[-1] if self._samples else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._samples)
