"""Graceful shutdown: stop receiving, finish in-flight, hand back the rest."""

from __future__ import annotations

import threading

from shared.listener import Lease
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues


def test_stop_finishes_the_in_flight_message_and_hands_back_the_rest(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    for i in range(4):
        source.queue.send(f"m{i}")
    entered = threading.Event()
    release = threading.Event()

    def handler(lease: Lease) -> None:
        entered.set()
        release.wait(5)

    listener = listener_factory(
        [source], handler, fast_config(batch_size=4, handler_parallelism=1, visibility_timeout=30)
    )
    listener.start(threads=1)
    assert entered.wait(5)
    result: list[bool] = []
    stopper = threading.Thread(target=lambda: result.append(listener.stop(timeout=5)))
    stopper.start()
    assert wait_until(lambda: listener.stopping)
    receives = memq(source).calls["receive"]
    release.set()
    stopper.join()

    assert result == [True]
    snap = listener.snapshot()
    assert (snap.handled, snap.active_threads, snap.in_flight) == (1, 0, 0)
    assert memq(source).calls["receive"] == receives  # no receive after stop
    # the three not started were handed back at once (visible now, not in 30 s)
    assert len(source.queue.peek()) == 3


def test_a_handler_that_cannot_finish_in_time_lets_its_message_reappear(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("stuck")
    entered = threading.Event()
    release = threading.Event()

    def handler(lease: Lease) -> None:
        entered.set()
        release.wait(10)

    listener = listener_factory([source], handler, fast_config(visibility_timeout=1))
    listener.start(threads=1)
    assert entered.wait(5)
    try:
        assert listener.stop(timeout=0.2) is False
        # no more renewals: after its visibility timeout another instance can take it
        assert wait_until(lambda: len(source.queue.peek()) == 1, timeout=3)
    finally:
        release.set()
