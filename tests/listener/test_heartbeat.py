"""The heartbeat entity: the listener's state per instance, throttled."""

from __future__ import annotations

import json
import os
import re

from shared.listener import Heartbeat, ListenerState, new_instance_id
from shared.storage.ports import Entity
from tests.listener.helpers import wait_until


class RecordingTable:
    """Only what the heartbeat uses of the Table port (``create``, ``upsert``), hence the
    ``type: ignore[arg-type]`` where it is passed as a ``Table``."""

    def __init__(self) -> None:
        self.writes: list[Entity] = []

    @property
    def name(self) -> str:
        return "processors"

    def create(self) -> None:
        pass

    def upsert(self, entity: Entity) -> Entity:
        self.writes.append(entity)
        return entity


def make(clock: list[float], **options: float) -> tuple[Heartbeat, ListenerState, RecordingTable]:
    state = ListenerState()
    table = RecordingTable()
    beat = Heartbeat(
        table,  # type: ignore[arg-type]
        state,
        role="processor",
        instance_id="host-1-abc",
        clock=lambda: clock[0],
        **options,  # type: ignore[arg-type]
    )
    return beat, state, table


def test_writes_every_10s_while_busy_and_every_5_minutes_while_idle() -> None:
    clock = [1000.0]
    beat, state, table = make(clock)
    assert beat.beat_if_due()  # the first one always goes
    clock[0] += 299
    assert not beat.beat_if_due()  # idle: not before five minutes
    clock[0] += 1
    assert beat.beat_if_due()

    state.received(1)  # a message in flight: busy
    clock[0] += 5
    assert not beat.beat_if_due()
    clock[0] += 5
    assert beat.beat_if_due()
    state.finished(latency_seconds=0.02)  # progress since the last beat: still busy
    clock[0] += 10
    assert beat.beat_if_due()
    clock[0] += 10
    assert not beat.beat_if_due()  # no progress, nothing in flight: idle again
    assert len(table.writes) == 4


def test_the_entity_carries_the_snapshot() -> None:
    beat, state, table = make([0.0])
    state.set_depths({"work-high-0": 2, "work-low-0": 1})
    state.thread_started()
    state.received(1)
    state.finished(latency_seconds=0.015)
    beat.beat_if_due()
    (entity,) = table.writes
    assert (entity.partition_key, entity.row_key) == ("processor", "host-1-abc")
    props = entity.properties
    assert props["status"] == "running"
    assert props["active_threads"] == 1
    assert props["handled"] == 1
    assert props["queue_depth"] == 3
    assert json.loads(props["queue_depths"]) == {"work-high-0": 2, "work-low-0": 1}
    assert props["p95_latency_ms"] == 15.0
    assert props["pid"] == os.getpid()
    assert None not in props.values()  # tables cannot store null


def burst(state: ListenerState, threads: int) -> None:
    """Threads that start and all retire again before the next beat."""
    for _ in range(threads):
        state.thread_started()
    for _ in range(threads):
        state.thread_ended(retired=True)


def test_each_beat_carries_the_peak_of_threads_since_the_previous_one() -> None:
    clock = [0.0]
    beat, state, table = make(clock, peak_hold=0.5)  # shorter than a beat: no hold here
    assert beat.beat_if_due()
    burst(state, 3)
    clock[0] += 1
    assert beat.beat_if_due()  # the threads came and went: written promptly
    clock[0] += 1
    assert beat.beat_if_due()  # the peak came back down: written promptly too
    clock[0] += 1
    assert not beat.beat_if_due()  # nothing changed since
    state.thread_started()  # one thread that runs over a beat, then retires
    clock[0] += 1
    assert beat.beat_if_due()
    state.thread_ended(retired=True)
    clock[0] += 1
    assert beat.beat_if_due()
    clock[0] += 1
    assert beat.beat_if_due()

    figures = [
        (w.properties["active_threads"], w.properties["peak_active_threads"]) for w in table.writes
    ]
    assert figures == [(0, 0), (0, 3), (0, 0), (1, 1), (0, 1), (0, 0)]


def test_a_peak_is_held_for_the_hold_then_comes_down_promptly() -> None:
    clock = [0.0]
    beat, state, table = make(clock, peak_hold=6.0)
    assert beat.beat_if_due()
    burst(state, 3)
    clock[0] += 1
    assert beat.beat_if_due()
    state.thread_started()  # a change of shape within the hold: written, the peak still 3
    clock[0] += 1
    assert beat.beat_if_due()
    state.thread_ended(retired=True)
    clock[0] += 1
    assert beat.beat_if_due()
    clock[0] += 4.5  # 7.5 s: the 3 taken at 1 s has expired; the 1s taken at 2 and 3 s hold
    assert beat.beat_if_due()
    clock[0] += 1
    assert not beat.beat_if_due()  # 8.5 s: the 1 taken at 3 s still holds
    clock[0] += 1
    assert beat.beat_if_due()  # 9.5 s: nothing holds

    figures = [
        (w.properties["active_threads"], w.properties["peak_active_threads"]) for w in table.writes
    ]
    assert figures == [(0, 0), (0, 3), (1, 3), (0, 3), (0, 1), (0, 0)]


def test_a_reader_slower_than_the_beats_sees_every_burst() -> None:
    """The dashboard samples every 2 s while busy beats come every second: each burst of
    threads, however short, is in an entity the reader reads."""
    clock = [0.0]
    beat, state, table = make(clock)
    seen: list[int] = []
    for second in range(40):
        if second % 5 == 0:
            burst(state, 2 + second // 5)  # bursts of 2, 3, ... 9 threads
        elif second % 5 == 1:
            state.thread_started()  # a change of shape at once after, beaten promptly
            state.thread_ended(retired=True)
        beat.beat_if_due()
        if second % 2 == 1:  # the reader, out of step with the beats
            seen.append(table.writes[-1].properties["peak_active_threads"])
        clock[0] += 1
    for threads in range(2, 10):
        assert threads in seen, (threads, seen)


def test_a_peak_taken_for_a_failed_write_goes_with_the_next_one() -> None:
    clock = [0.0]
    beat, state, table = make(clock)
    failing = [True]
    record = table.upsert

    def upsert(entity: Entity) -> Entity:
        if failing[0]:
            raise ConnectionError("table service down")
        return record(entity)

    table.upsert = upsert  # type: ignore[method-assign]
    burst(state, 2)
    assert not beat.beat_if_due()
    failing[0] = False
    assert beat.beat_if_due()
    assert table.writes[-1].properties["peak_active_threads"] == 2


def test_the_thread_beats_and_stop_marks_the_instance_stopped() -> None:
    state = ListenerState()
    table = RecordingTable()
    beat = Heartbeat(table, state, role="controller", busy_interval=0.02)  # type: ignore[arg-type]
    beat.start()
    assert wait_until(lambda: len(table.writes) >= 1)
    beat.stop()
    assert table.writes[-1].properties["status"] == "stopped"
    assert table.writes[-1].row_key == beat.instance_id


def test_instance_ids_are_hostname_pid_random() -> None:
    first, second = new_instance_id(), new_instance_id()
    assert first != second
    assert re.fullmatch(rf".+-{os.getpid()}-[0-9a-f]{{6}}", first)
