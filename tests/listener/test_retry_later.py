"""RetryLater: a handler's explicit short wait brings the message back soon, not as an error."""

from __future__ import annotations

from shared.listener import Lease, RetryLater, growing_delay
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, wait_until
from tests.support.memory_queue import MemoryQueues


def test_a_deferred_message_comes_back_after_its_delay_not_its_visibility_timeout(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("wait for me")
    attempts: list[int] = []

    def handler(lease: Lease) -> None:
        attempts.append(lease.dequeue_count)
        if len(attempts) < 3:
            raise RetryLater("not yet", delay=1)

    # A visibility timeout far longer than the test: only the deferral brings it back.
    listener = listener_factory([source], handler, fast_config(visibility_timeout=120))
    listener.start(threads=1)

    assert wait_until(lambda: len(attempts) == 3, timeout=10)
    assert attempts == [1, 2, 3]
    assert wait_until(lambda: source.queue.approximate_count() == 0)
    snapshot = listener.snapshot()
    assert snapshot.errors == 0
    assert snapshot.handled >= 1


def test_growing_delay_doubles_from_the_first_and_stops_at_the_cap() -> None:
    assert [growing_delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert growing_delay(0) == 1
    assert growing_delay(3, first=5, cap=12) == 12


def test_the_last_thread_waits_for_a_deferred_message_instead_of_retiring(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """With a trigger the last thread may retire, but not while a handed-back message is
    due: only the slow safety poll (a minute here) would find it again."""
    (source,) = make_sources(queues)
    source.queue.send("early")
    attempts: list[int] = []

    def handler(lease: Lease) -> None:
        attempts.append(lease.dequeue_count)
        if len(attempts) == 1:
            raise RetryLater("not yet", delay=1)

    listener = listener_factory(
        [source], handler, fast_config(safety_poll_seconds=60.0), trigger_available=True
    )
    listener.start(threads=1)

    assert wait_until(lambda: len(attempts) == 2, timeout=5)
    assert wait_until(lambda: listener.snapshot().safety_poll_only)  # then it retires


def test_the_last_thread_waits_for_a_failed_message_to_reappear(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("flaky")
    attempts: list[int] = []

    def handler(lease: Lease) -> None:
        attempts.append(lease.dequeue_count)
        if len(attempts) == 1:
            raise RuntimeError("transient")

    listener = listener_factory(
        [source],
        handler,
        fast_config(visibility_timeout=1, safety_poll_seconds=60.0),
        trigger_available=True,
    )
    listener.start(threads=1)

    assert wait_until(lambda: attempts == [1, 2], timeout=5)
