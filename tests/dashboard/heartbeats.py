"""Processor heartbeats for the dashboard and /metrics tests, written by the real writer.

:class:`~shared.listener.heartbeat.Heartbeat` builds the entities, from a
:class:`~shared.listener.state.ListenerState` driven to the wanted figures, so the reader
under test sees exactly what a processor writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shared.listener.heartbeat import Heartbeat
from shared.listener.state import ListenerState
from shared.storage.ports import Entity, Table


@dataclass(frozen=True)
class Figures:
    active_threads: int = 2
    total_threads: int = 3
    queue_depth: int = 40
    handled: int = 12
    latency_seconds: float = 0.05


def state_with(figures: Figures) -> ListenerState:
    state = ListenerState()
    for _ in range(figures.total_threads):
        state.thread_started()
    for _ in range(figures.total_threads - figures.active_threads):
        state.thread_ended(retired=True)
    state.set_depths({"work-normal-0": figures.queue_depth})
    state.received(figures.handled)
    for _ in range(figures.handled):
        state.finished(latency_seconds=figures.latency_seconds)
    return state


def write_beat(
    table: Table,
    instance_id: str,
    figures: Figures = Figures(),
    *,
    status: str = "running",
    taken_at: datetime | None = None,
) -> Entity:
    """Upsert the heartbeat entity of ``instance_id``; ``taken_at`` backdates it."""
    state = state_with(figures)
    entity = Heartbeat(table, state, role="processor", instance_id=instance_id).entity(
        state.snapshot(), status
    )
    if taken_at is not None:
        entity = Entity(
            entity.partition_key, entity.row_key, {**entity.properties, "taken_at": taken_at}
        )
    return table.upsert(entity)


def write_older_beat(table: Table, instance_id: str, figures: Figures = Figures()) -> Entity:
    """The entity of a processor from before beats carried ``peak_active_threads`` (the
    other figures as today's writer makes them)."""
    entity = write_beat(table, instance_id, figures)
    properties = {k: v for k, v in entity.properties.items() if k != "peak_active_threads"}
    assert len(properties) == len(entity.properties) - 1
    return table.upsert(Entity(entity.partition_key, entity.row_key, properties))
