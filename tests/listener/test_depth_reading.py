"""A processor's reported depth is its latest reading, not the one taken when work arrived.

The bug this guards against: the dashboard kept showing "queue depth 3" for a processor
long after its queues were empty, because the depth was only refreshed by depth queries (a
trigger, or the safety poll once every thread had retired) and the heartbeat, idle again,
wrote the stale figure once a minute.
"""

from __future__ import annotations

import threading

from shared.listener import Heartbeat, ListenerState
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, wait_until
from tests.listener.test_heartbeat import RecordingTable
from tests.support.memory_queue import MemoryQueues


def test_the_depth_falls_to_zero_once_the_queues_are_drained(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "normal"), partitions=2)
    for i in range(3):
        sources[i].queue.send(f"m{i}")
    release = threading.Event()
    listener = listener_factory(
        sources,
        lambda lease: release.wait(5),
        # No safety poll during the test: only the dequeue threads can see the queues empty.
        fast_config(safety_poll_seconds=600),
        trigger_available=True,
    )
    table = RecordingTable()
    beat = Heartbeat(
        table,  # type: ignore[arg-type]
        listener.state,
        role="processor",
        busy_interval=600,
        idle_interval=600,
        prompt_interval=0.05,
    )
    beat.start()
    listener.start()  # one depth query: 3 messages
    assert wait_until(lambda: table.writes[-1].properties["queue_depth"] == 3)
    release.set()
    assert wait_until(lambda: listener.snapshot().handled == 3)

    assert wait_until(lambda: listener.snapshot().queue_depth == 0)
    assert listener.snapshot().queue_depths == {source.name: 0 for source in sources}
    # The heartbeat carries the change without waiting for its busy or idle interval.
    assert wait_until(lambda: table.writes[-1].properties["queue_depth"] == 0)
    beat.stop()


def test_thread_changes_are_written_early_and_at_most_once_per_prompt_interval() -> None:
    clock = [0.0]
    state = ListenerState()
    table = RecordingTable()
    beat = Heartbeat(
        table,  # type: ignore[arg-type]
        state,
        role="processor",
        prompt_interval=1.0,
        clock=lambda: clock[0],
    )
    assert beat.beat_if_due()
    clock[0] += 0.5
    state.thread_started()
    assert not beat.beat_if_due()  # a change, but too soon after the last write
    clock[0] += 0.5
    assert beat.beat_if_due()  # a second after: written, long before the idle minute
    clock[0] += 5
    assert not beat.beat_if_due()  # nothing changed since: idle interval again
    assert [w.properties["active_threads"] for w in table.writes] == [0, 1]


def test_the_owner_adds_its_own_figures_to_the_entity() -> None:
    table = RecordingTable()
    beat = Heartbeat(
        table,  # type: ignore[arg-type]
        ListenerState(),
        role="processor",
        extra=lambda: {"rated_transactions": 42},
    )
    beat.beat_if_due()
    assert table.writes[-1].properties["rated_transactions"] == 42
