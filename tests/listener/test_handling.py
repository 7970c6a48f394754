"""Dequeue threads: receive, handle (in parallel), delete only after, failures reappear."""

from __future__ import annotations

import threading

from shared.listener import Lease
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues


def test_messages_are_handled_and_then_deleted(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    for i in range(50):
        source.queue.send(f"m{i}")
    seen: list[str] = []
    lock = threading.Lock()

    def handler(lease: Lease) -> None:
        with lock:
            seen.append(lease.content)

    listener = listener_factory([source], handler, fast_config())
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().handled == 50)
    assert sorted(seen) == sorted(f"m{i}" for i in range(50))
    assert memq(source).contents() == []
    assert memq(source).calls["receive"] >= 2  # 50 messages need two receives of 32
    assert memq(source).calls["delete"] == 50


def test_delete_happens_only_after_the_handler_returns(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("the-one")
    still_queued_during_handling: list[bool] = []

    def handler(lease: Lease) -> None:
        still_queued_during_handling.append("the-one" in memq(source).contents())

    listener = listener_factory([source], handler, fast_config())
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().handled == 1)
    assert still_queued_during_handling == [True]
    assert memq(source).contents() == []


def test_a_failing_handler_leaves_the_message_to_reappear(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("flaky")
    attempts: list[int] = []

    def handler(lease: Lease) -> None:
        attempts.append(lease.dequeue_count)
        if len(attempts) == 1:
            raise RuntimeError("transient failure")

    listener = listener_factory([source], handler, fast_config(visibility_timeout=1))
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().errors == 1)
    assert memq(source).contents() == ["flaky"]  # not deleted: it will reappear
    assert wait_until(lambda: listener.snapshot().handled == 1)
    assert attempts == [1, 2]  # the same message, dequeued again after its timeout
    assert memq(source).contents() == []


def test_messages_of_one_receive_are_handled_in_parallel(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    for i in range(4):
        source.queue.send(f"m{i}")
    # Passes only if all four handlers run at the same time.
    barrier = threading.Barrier(4, timeout=3)
    listener = listener_factory(
        [source], lambda lease: barrier.wait(), fast_config(handler_parallelism=4)
    )
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().handled == 4)
    assert listener.snapshot().errors == 0
    assert memq(source).calls["receive"] >= 1
    assert listener.snapshot().total_threads == 1
