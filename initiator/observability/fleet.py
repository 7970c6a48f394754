"""The live processor instances, read from their heartbeat entities.

Each processor upserts one entity in the heartbeats table (partition = role, row = instance
id; see :mod:`shared.listener.heartbeat`): every ~10 s while busy, every
:data:`~shared.listener.heartbeat.HEARTBEAT_IDLE_SECONDS` (5 minutes) while idle,
and a last one marked ``stopped``. An instance is live when its last beat is not marked
``stopped`` and is younger than :data:`STALE_AFTER` — a couple of idle intervals, so that an
idle instance is not mistaken for a dead one, and a crashed one drops out within minutes.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.listener.heartbeat import HEARTBEAT_IDLE_SECONDS
from shared.storage.ports import Table

#: The heartbeat partition the processors write to (``Heartbeat(role="processor")``).
PROCESSOR_ROLE = "processor"
#: A beat older than this is from an instance that stopped without saying so.
STALE_AFTER = timedelta(seconds=2.5 * HEARTBEAT_IDLE_SECONDS)


class LatencyHistogram(BaseModel):
    """Handlings per latency bucket since the instance started (``counts`` has one more
    entry than ``le``: above every bound), and their summed latency."""

    le: list[float] = Field(description="bucket upper bounds, seconds")
    counts: list[int]
    sum: float = Field(description="seconds")


class ProcessorInstance(BaseModel):
    """One processor instance's last heartbeat, as the dashboard and /metrics show it."""

    model_config = ConfigDict(extra="ignore")

    instance: str
    host: str = ""
    pid: int = 0
    status: str
    taken_at: datetime
    beat_age_seconds: float = Field(default=0.0, description="how long ago the last beat was")
    active_threads: int = Field(default=0, description="dequeue threads running at the beat")
    peak_active_threads: int = Field(
        default=0,
        description="the most dequeue threads running at once since the instance's previous "
        "beat (threads can start and retire between two beats); a beat from a processor "
        "older than this field reads as active_threads",
    )
    total_threads: int = Field(default=0, description="dequeue threads started since it started")
    queue_depth: int = 0
    in_flight: int = 0
    handled: int = 0
    errors: int = 0
    poisoned: int = 0
    p95_latency_ms: float | None = Field(default=None, description="absent until measured")
    latency_histogram: LatencyHistogram | None = Field(
        default=None, description="handling latencies since the instance started, bucketed"
    )
    rated_transactions: int = Field(default=0, description="transactions rated since it started")
    storage_requests: dict[str, int] = Field(
        default_factory=dict,
        description="its process's storage requests by kind, since the process started",
    )

    @model_validator(mode="before")
    @classmethod
    def _peak_of_an_older_beat(cls, data: Any) -> Any:
        # A processor from before the peak was written (a rolling upgrade): its current
        # count is the best figure there is.
        if isinstance(data, dict) and "peak_active_threads" not in data:
            return {**data, "peak_active_threads": data.get("active_threads", 0)}
        return data

    @field_validator("storage_requests", "latency_histogram", mode="before")
    @classmethod
    def _from_json(cls, value: object) -> object:
        # A table property holds no mapping: the heartbeat stores these as JSON text.
        return json.loads(value) if isinstance(value, str) else value


def read_live_processors(
    table: Table, *, now: datetime, stale_after: timedelta = STALE_AFTER
) -> list[ProcessorInstance]:
    """The processors whose last heartbeat is recent and not ``stopped``, by instance id."""
    live: list[ProcessorInstance] = []
    for entity in table.query(PROCESSOR_ROLE):
        beat = ProcessorInstance.model_validate({**entity.properties, "instance": entity.row_key})
        age = now - beat.taken_at
        if beat.status == "stopped" or age > stale_after:
            continue
        # A clock a little ahead on the processor's host must not show a negative age.
        live.append(beat.model_copy(update={"beat_age_seconds": max(age.total_seconds(), 0.0)}))
    return sorted(live, key=lambda instance: instance.instance)
