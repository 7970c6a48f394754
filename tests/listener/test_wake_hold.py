"""The wake hold: soon after a trigger, empty receives do not lengthen the back-off.

The controller hears of a batch when its work items are queued; its results come only once
a processor has rated a chunk, so its first receives after the trigger find nothing. With
``wake_hold`` those receives keep the thread looking every ``backoff_min_idle``; once the
hold is over the back-off grows again from its first step, not from the number of empty
receives the hold let pass.
"""

from __future__ import annotations

import time

from shared.listener import QueueListener
from shared.listener.wake import WakeSignal
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueue, MemoryQueues


class ManualClock:
    """The listener's clock, moved by the test: the hold is measured on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_woken_within_counts_from_the_last_wake() -> None:
    clock = ManualClock()
    signal = WakeSignal(clock)
    assert not signal.woken_within(1000.0)  # never woken
    clock.now = 10.0
    signal.wake()
    clock.now = 10.9
    assert signal.woken_within(1.0)
    clock.now = 11.0
    assert not signal.woken_within(1.0)
    signal.wake()
    assert signal.woken_within(0.5)


def _receives_over(queue: MemoryQueue, seconds: float) -> int:
    before = queue.calls["receive"]
    time.sleep(seconds)
    return queue.calls["receive"] - before


def _sleeping_listener(
    queues: MemoryQueues, listener_factory: ListenerFactory, clock: ManualClock, hold: float
) -> tuple[QueueListener, MemoryQueue]:
    """One thread on an empty queue, already backing off: 0.01 s, then 0.33-0.49 s, …"""
    config = fast_config(
        backoff_min_idle=0.01,
        backoff_delta=0.4,
        backoff_max_idle=5.0,
        wake_hold=hold,
        scaling_rule="0:1",
        max_threads=1,
    )
    (source,) = make_sources(queues)
    listener = listener_factory([source], lambda lease: None, config, clock=clock)
    listener.start(threads=1)
    queue = memq(source)
    assert wait_until(lambda: queue.calls["receive"] >= 2)
    return listener, queue


def test_within_the_hold_a_thread_keeps_looking_every_min_idle(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    clock = ManualClock()
    listener, queue = _sleeping_listener(queues, listener_factory, clock, hold=1.0)
    listener.on_work_detected()  # the trigger, at 0 on the listener's clock
    # The clock stands still: every empty receive is within the hold, each sleep 0.01 s.
    held = _receives_over(queue, 0.6)
    assert held >= 8, f"{held} receives in 0.6 s within the hold"

    clock.now = 1.0  # the hold is over: the next sleeps are 0.33-0.49 s, then 0.97-1.45 s
    _receives_over(queue, 0.05)  # the sleep under way when the hold ended
    after = _receives_over(queue, 0.6)
    assert 1 <= after <= 3, f"{after} receives in 0.6 s after the hold"


def test_without_a_hold_the_back_off_grows_from_the_first_empty_receive(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    clock = ManualClock()
    listener, queue = _sleeping_listener(queues, listener_factory, clock, hold=0.0)
    listener.on_work_detected()
    # After the wake: a receive, a 0.01 s sleep, a receive, a 0.33-0.49 s sleep, …
    looked = _receives_over(queue, 0.6)
    assert 1 <= looked <= 4, f"{looked} receives in 0.6 s without a hold"


def test_a_wake_that_does_not_hold_is_not_counted() -> None:
    clock = ManualClock()
    signal = WakeSignal(clock)
    signal.wake(hold=False)
    assert not signal.woken_within(1.0)


def test_work_a_thread_finds_by_itself_starts_no_hold(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    # Only a trigger says that more work follows; a thread that found work after backing
    # off tells the listener too (to scale), and that must not keep it polling fast after.
    clock = ManualClock()
    handled: list[str] = []
    config = fast_config(
        backoff_min_idle=0.01,
        backoff_delta=0.4,
        backoff_max_idle=5.0,
        wake_hold=1.0,
        scaling_rule="0:1",
        max_threads=1,
    )
    (source,) = make_sources(queues)
    queue = memq(source)
    listener = listener_factory(
        [source], lambda lease: handled.append(lease.content), config, clock=clock
    )
    listener.start(threads=1)
    assert wait_until(lambda: queue.calls["receive"] >= 2)  # backing off, never triggered
    queue.send("found")
    assert wait_until(lambda: handled == ["found"], timeout=5)
    _receives_over(queue, 0.05)
    # The clock stands still: a hold started by the find would mean a receive every 0.01 s.
    looked = _receives_over(queue, 0.6)
    assert looked <= 3, f"{looked} receives in 0.6 s after the thread found work itself"
