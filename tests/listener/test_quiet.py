"""The quiet safety poll: an owner watching a cheaper work signal lets the listener skip its
depth scans while every queue was empty, without stranding work it cannot be told about."""

from __future__ import annotations

import time
from typing import Any

from azure.core.exceptions import ServiceResponseError

from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues

TICK = 0.05


def depth_scans(queues: MemoryQueues, names: list[str]) -> int:
    return sum(queues.queue(name).calls["count"] for name in names)


def test_a_quiet_listener_scans_no_queue_while_its_last_scan_found_them_empty(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "normal", "low"), partitions=2)
    names = [source.name for source in sources]
    quiet = listener_factory(
        sources,
        lambda lease: None,
        fast_config(safety_poll_seconds=TICK, quiet_rescan_seconds=600),
        trigger_available=True,
    )
    quiet.start()  # scans the depth: every queue empty
    assert wait_until(lambda: quiet.snapshot().safety_poll_only)
    before = depth_scans(queues, names)
    time.sleep(10 * TICK)
    assert depth_scans(queues, names) == before  # ten ticks, not one request

    # The owner's signal moved: one scan, and the work is found at once.
    sources[4].queue.send("announced by the signal")
    quiet.on_work_detected()
    assert wait_until(lambda: quiet.snapshot().handled == 1)


def test_without_quiet_every_tick_scans_every_queue(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "low"))
    names = [source.name for source in sources]
    listener = listener_factory(
        sources, lambda lease: None, fast_config(safety_poll_seconds=TICK), trigger_available=True
    )
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().safety_poll_only)
    before = depth_scans(queues, names)
    time.sleep(10 * TICK)
    assert depth_scans(queues, names) - before >= 2 * len(names)


def test_the_quiet_rescan_finds_work_whose_trigger_and_signal_were_both_lost(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("normal",), partitions=2)
    listener = listener_factory(
        sources,
        lambda lease: None,
        fast_config(safety_poll_seconds=TICK, quiet_rescan_seconds=0.5),
        trigger_available=True,
    )
    listener.start()
    assert wait_until(lambda: listener.snapshot().safety_poll_only)
    sources[1].queue.send("nobody said a word")
    assert wait_until(lambda: listener.snapshot().handled == 1)


def test_messages_hidden_at_a_crashed_instance_keep_the_safety_poll_scanning(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """The depth counts hidden messages: while a scan saw any, the listener is not quiet,
    so a message held by an instance that died is taken once its lease runs out."""
    (source,) = make_sources(queues)
    source.queue.send("held by an instance that died")
    (held,) = source.queue.receive(1, visibility_timeout=1)
    listener = listener_factory(
        [source],
        lambda lease: None,
        fast_config(safety_poll_seconds=TICK, quiet_rescan_seconds=600),
        trigger_available=True,
    )
    listener.start()  # the scan sees 1 (hidden): a thread, which finds nothing and retires
    assert wait_until(lambda: listener.snapshot().safety_poll_only)
    assert listener.snapshot().handled == 0
    assert wait_until(lambda: listener.snapshot().handled == 1)
    assert held.content == "held by an instance that died"


def test_a_trigger_naming_its_queues_asks_the_depth_of_those_alone(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "normal", "low"), partitions=2)
    names = [source.name for source in sources]
    listener = listener_factory(
        sources, lambda lease: None, fast_config(safety_poll_seconds=60), trigger_available=True
    )
    listener.start(threads=0)
    sources[3].queue.send("announced by a trigger")
    listener.on_work_detected([sources[3].name])
    assert wait_until(lambda: listener.snapshot().handled == 1)
    assert queues.queue(names[3]).calls["count"] == 1
    assert depth_scans(queues, names) == 1  # one request, not one per queue


def test_a_trigger_whose_queue_is_empty_does_not_quiet_a_poll_that_saw_messages(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """Only a scan of every queue may quiet the safety poll: the trigger's queue being empty
    says nothing of a message held elsewhere by an instance that died."""
    held_on, announced_on = make_sources(queues, ("normal",), partitions=2)
    held_on.queue.send("held by an instance that died")
    held_on.queue.receive(1, visibility_timeout=1)
    listener = listener_factory(
        [held_on, announced_on],
        lambda lease: None,
        fast_config(safety_poll_seconds=TICK, quiet_rescan_seconds=600),
        trigger_available=True,
    )
    listener.start(threads=0)
    listener.on_work_detected([announced_on.name])  # finds its queue empty
    assert wait_until(lambda: listener.snapshot().handled == 1)


def test_messages_a_lost_receive_hid_are_found_although_no_scan_saw_them(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """A receive served whose answer was lost hid its messages for the visibility timeout,
    and the last scan (every queue empty) came before they were sent. The listener looks for
    them when they are due, as for messages it handed back, and keeps a thread until then:
    its threads would otherwise find the queue empty, retire, and leave a quiet poll."""
    (source,) = make_sources(queues)
    queue = memq(source)
    listener = listener_factory(
        [source],
        lambda lease: None,
        fast_config(
            safety_poll_seconds=TICK,
            quiet_rescan_seconds=600,
            idle_rescan_seconds=600,
            visibility_timeout=1,
        ),
        trigger_available=True,
    )
    listener.start()
    assert wait_until(lambda: listener.snapshot().safety_poll_only)
    listener.on_work_detected()  # a work signal: a scan that sees nothing, and one thread
    assert listener.snapshot().active_threads == 1

    receive = queue.receive
    lost: list[Any] = []

    def receive_with_its_answer_lost_once(max_messages: int, visibility_timeout: int) -> list[Any]:
        messages = receive(max_messages, visibility_timeout)
        if messages and not lost:
            lost.extend(messages)
            raise ServiceResponseError("the answer was lost on its way back")
        return messages

    queue.receive = receive_with_its_answer_lost_once  # type: ignore[method-assign]
    queue.send("announced by a trigger while a thread ran: no scan")
    listener.on_work_detected([source.name])
    assert wait_until(lambda: bool(lost))
    assert wait_until(lambda: listener.snapshot().handled == 1)


def test_messages_hidden_by_a_lost_receive_the_sdk_retried_are_found(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """The SDK retries a receive whose answer was lost: the retry comes back empty while the
    lost one's messages stay hidden for the visibility timeout, and no exception says so. A
    queue found empty this soon after it had messages is looked at again when anything such
    a receive hid is due, and a thread is kept until then."""
    (source,) = make_sources(queues)
    queue = memq(source)
    listener = listener_factory(
        [source],
        lambda lease: None,
        fast_config(
            safety_poll_seconds=TICK,
            quiet_rescan_seconds=600,
            idle_rescan_seconds=600,
            visibility_timeout=1,
        ),
        trigger_available=True,
    )
    listener.start()
    queue.send("the work before")
    listener.on_work_detected([source.name])
    assert wait_until(lambda: listener.snapshot().handled == 1)

    receive = queue.receive
    hidden: list[Any] = []

    def receive_retried_after_its_answer_was_lost(
        max_messages: int, visibility_timeout: int
    ) -> list[Any]:
        messages = receive(max_messages, visibility_timeout)
        if messages and not hidden:
            hidden.extend(messages)  # served, its answer lost: the retry asks again
            return receive(max_messages, visibility_timeout)
        return messages

    queue.receive = receive_retried_after_its_answer_was_lost  # type: ignore[method-assign]
    queue.send("hidden by the lost answer")
    listener.on_work_detected([source.name])
    assert wait_until(lambda: bool(hidden))
    assert wait_until(lambda: listener.snapshot().handled == 2)


def test_the_first_receive_after_an_announcement_lost_and_retried_is_looked_at_again(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """As above, but the receive lost and retried is the first after a quiet spell: work
    announced on the queue by name counts as the queue having had work."""
    (source,) = make_sources(queues)
    queue = memq(source)
    listener = listener_factory(
        [source],
        lambda lease: None,
        fast_config(
            safety_poll_seconds=TICK,
            quiet_rescan_seconds=600,
            idle_rescan_seconds=600,
            visibility_timeout=1,
        ),
        trigger_available=True,
    )
    listener.start()
    assert wait_until(lambda: listener.snapshot().safety_poll_only)
    listener.on_work_detected()  # a work signal: a scan that sees nothing, and one thread
    assert listener.snapshot().active_threads == 1

    receive = queue.receive
    hidden: list[Any] = []

    def receive_retried_after_its_answer_was_lost(
        max_messages: int, visibility_timeout: int
    ) -> list[Any]:
        messages = receive(max_messages, visibility_timeout)
        if messages and not hidden:
            hidden.extend(messages)
            return receive(max_messages, visibility_timeout)
        return messages

    queue.receive = receive_retried_after_its_answer_was_lost  # type: ignore[method-assign]
    queue.send("the first work after a quiet spell")
    listener.on_work_detected([source.name])
    assert wait_until(lambda: bool(hidden))
    assert wait_until(lambda: listener.snapshot().handled == 1)
