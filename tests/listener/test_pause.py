"""Pause and resume (the release gate's hook): no receive while paused, in-flight finishes."""

from __future__ import annotations

import threading
import time
from typing import Any

from shared.listener import Lease
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueue, MemoryQueues


def test_pause_finishes_in_flight_makes_no_requests_and_resume_takes_the_rest(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("first")
    entered = threading.Event()
    release = threading.Event()
    handled: list[str] = []

    def handler(lease: Lease) -> None:
        if lease.content == "first":
            entered.set()
            release.wait(5)
        handled.append(lease.content)

    listener = listener_factory(
        [source], handler, fast_config(backoff_max_idle=10.0), trigger_available=True
    )
    listener.start(threads=2)
    assert entered.wait(5)
    listener.pause()
    time.sleep(0.05)  # a receive already under way when pausing may still complete
    for i in range(3):
        source.queue.send(f"later-{i}")
    release.set()
    assert wait_until(lambda: handled == ["first"])
    assert wait_until(lambda: listener.snapshot().in_flight == 0)

    requests = memq(source).requests()
    assert listener.on_work_detected() == 0  # a trigger while paused starts nothing
    time.sleep(0.4)  # longer than the safety poll and many back-off rounds
    assert memq(source).requests() == requests
    assert listener.paused
    assert source.queue.approximate_count() == 3

    listener.resume()
    assert wait_until(lambda: len(handled) == 4)
    assert not listener.paused
    assert sorted(handled[1:]) == ["later-0", "later-1", "later-2"]


def test_stop_wakes_paused_threads(queues: MemoryQueues, listener_factory: ListenerFactory) -> None:
    (source,) = make_sources(queues)
    listener = listener_factory([source], lambda lease: None, fast_config())
    listener.start(threads=3)
    listener.pause()
    assert listener.stop(timeout=5) is True
    assert listener.snapshot().active_threads == 0


def test_a_pause_ends_the_receive_round_under_way(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """A round tries every empty queue in turn; a hold arriving during the first receive
    must not let the thread go on to the others."""
    sources = make_sources(queues, partitions=4)
    receives: list[str] = []
    listener = listener_factory([*sources], lambda lease: None, fast_config())

    for source in sources:
        queue = memq(source)
        original = queue.receive

        def receive(*args: Any, _queue: MemoryQueue = queue, _original: Any = original) -> Any:
            receives.append(_queue.name)
            listener.pause()  # the hold arrives while this receive is under way
            return _original(*args)

        queue.receive = receive  # type: ignore[method-assign]

    listener.start(threads=1)
    assert wait_until(lambda: listener.paused and len(receives) >= 1)
    time.sleep(0.2)  # the rest of the round, if the thread went on with it
    assert len(receives) == 1, receives
    assert listener.stop(timeout=5) is True
