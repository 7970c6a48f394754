"""A listener whose new work announces itself (``idle_rescan_seconds``) leaves the queues
it found empty alone, whether its threads back off after a batch or rate one on another
queue: a trigger, a message it handed back coming due, or the rescan interval brings it
back to them, not every round."""

from __future__ import annotations

import threading
import time

from shared.domain.priority import PRIORITIES
from shared.listener import Lease
from shared.listener.priority import PriorityPlanner
from shared.listener.source import QueueSource
from shared.listener.wake import WakeSignal
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.listener.test_empty_backoff import FakeClock, names
from tests.support.memory_queue import MemoryQueues

RESCAN = 30.0


def receives(sources: list[QueueSource], queues_named: set[str] | None = None) -> int:
    return sum(
        memq(source).calls["receive"]
        for source in sources
        if queues_named is None or source.name in queues_named
    )


def test_an_empty_queue_is_left_alone_until_the_rescan(queues: MemoryQueues) -> None:
    clock = FakeClock()
    high, normal = make_sources(queues, ("high", "normal"))
    planner = PriorityPlanner(
        [high, normal], empty_recheck=0.5, empty_recheck_max=8.0, idle_rescan=RESCAN, clock=clock
    )
    planner.mark_empty(high)
    planner.mark_empty(normal)
    planner.mark_idle()
    clock.advance(10.0)  # past both doubling skips and their cap, not past the rescan
    assert planner.next_round() == []
    planner.forget_empty(["work-normal-0"])  # a trigger naming normal
    assert names(planner.next_round()) == ["work-normal-0"]
    clock.advance(RESCAN - 10.0)
    assert names(planner.next_round()) == ["work-high-0", "work-normal-0"]


def test_a_thread_rating_normal_work_does_not_ask_the_empty_high_queue_between_receives(
    queues: MemoryQueues,
) -> None:
    """Busy rounds too: the high queue found empty is asked again at the rescan, or when a
    trigger names it, not whenever its doubling skip runs out between two receives that
    found normal work (without the rescan it is asked in one round of two)."""
    clock = FakeClock()
    high, normal = make_sources(queues, ("high", "normal"))

    def high_asked(idle_rescan: float | None) -> int:
        planner = PriorityPlanner(
            [high, normal],
            empty_recheck=0.5,
            empty_recheck_max=8.0,
            idle_rescan=idle_rescan,
            clock=clock,
        )
        planner.mark_empty(high)
        asked = 0
        for _ in range(20):  # twenty receives that found normal work, a second apart
            clock.advance(1.0)
            round_ = names(planner.next_round())
            if "work-high-0" in round_:
                asked += 1
                planner.mark_empty(high)
            planner.mark_found(normal)
        return asked

    assert high_asked(None) >= 3
    assert high_asked(RESCAN) == 0
    planner = PriorityPlanner([high, normal], empty_recheck=0.5, idle_rescan=RESCAN, clock=clock)
    planner.mark_empty(high)
    planner.mark_found(normal)
    planner.forget_empty(["work-high-0"])  # a trigger naming high: asked first, at once
    assert names(planner.next_round()) == ["work-high-0", "work-normal-0"]


def test_a_message_handed_back_is_looked_for_when_it_is_due(queues: MemoryQueues) -> None:
    clock = FakeClock()
    high, normal = make_sources(queues, ("high", "normal"))
    planner = PriorityPlanner([high, normal], empty_recheck=0.5, idle_rescan=RESCAN, clock=clock)
    planner.expect_back("work-normal-0", clock() + 5.0)
    planner.mark_empty(high)
    planner.mark_empty(normal)
    clock.advance(4.9)
    assert planner.next_round() == []
    clock.advance(0.1)
    assert names(planner.next_round()) == ["work-normal-0"]
    planner.mark_empty(normal)  # asked once it was due: the expectation is spent
    clock.advance(1.0)
    assert planner.next_round() == []


def test_without_idle_rescan_idle_rounds_ask_once_the_skip_is_over(queues: MemoryQueues) -> None:
    clock = FakeClock()
    (normal,) = make_sources(queues, ("normal",))
    planner = PriorityPlanner([normal], empty_recheck=0.5, clock=clock)
    planner.mark_empty(normal)
    clock.advance(0.5)
    assert names(planner.next_round()) == ["work-normal-0"]


def back_off_after_a_batch(listener_factory: ListenerFactory, rescan: float | None) -> int:
    """Drain a batch on one of twelve queues, then count the receives of 0.6 s of back-off
    (rounds ~80 ms apart at the cap, as are the empty skips); with the rescan, a trigger
    naming a queue then gets that queue asked, and nothing else."""
    sources = make_sources(MemoryQueues(), PRIORITIES, partitions=4)
    busy = next(s for s in sources if s.name == "work-normal-0")
    for i in range(8):
        busy.queue.send(f"item-{i}")
    handled: list[str] = []
    config = fast_config(
        empty_recheck_seconds=0.01, empty_recheck_max_seconds=0.08, idle_rescan_seconds=rescan
    )
    listener = listener_factory(sources, lambda lease: handled.append(lease.content), config)
    listener.start(threads=1)
    assert wait_until(lambda: len(handled) == 8)
    before = receives(sources)
    time.sleep(0.6)
    counted = receives(sources) - before
    if rescan is not None:
        low = next(s for s in sources if s.name == "work-low-2")
        low.queue.send("announced")
        listener.on_work_detected(["work-low-2"])  # the trigger: found at once
        assert wait_until(lambda: "announced" in handled)
        asked = receives(sources)
        time.sleep(0.3)
        assert receives(sources) == asked  # and nothing more was asked
    listener.stop(timeout=5)
    return counted


def test_a_thread_backing_off_asks_the_empty_queues_once_not_every_round(
    listener_factory: ListenerFactory,
) -> None:
    """The plain listener asks all twelve queues in round after round of its back-off; with
    the rescan they are left alone until a trigger names one. (No trigger subscription: the
    last thread does not retire, so every round runs.)"""
    counts = {
        "plain": back_off_after_a_batch(listener_factory, None),
        "rescan": back_off_after_a_batch(listener_factory, RESCAN),
    }
    print(f"receives in 0.6 s of back-off: {counts}")
    assert counts["plain"] >= 3 * 12, counts  # every idle round asks every queue
    # at most the first round after the batch, whose skips had run out
    assert counts["rescan"] <= 12, counts


def receives_while_a_failed_message_waits(
    listener_factory: ListenerFactory, rescan: float | None
) -> int:
    """The handler fails once; the message is back after its 1 s visibility timeout and is
    taken again. Returns how often the three empty queues were asked meanwhile."""
    sources = make_sources(MemoryQueues(), ("high", "normal"), partitions=2)
    flaky = sources[-1]
    flaky.queue.send("flaky")
    attempts: list[int] = []

    def handler(lease: Lease) -> None:
        attempts.append(lease.dequeue_count)
        if len(attempts) == 1:
            raise RuntimeError("transient")

    config = fast_config(visibility_timeout=1, safety_poll_seconds=60.0, idle_rescan_seconds=rescan)
    listener = listener_factory(sources, handler, config, trigger_available=True)
    listener.start(threads=1)
    assert wait_until(lambda: attempts == [1, 2], timeout=5)
    listener.stop(timeout=5)
    return receives(sources, {s.name for s in sources if s is not flaky})


def test_a_failed_message_is_taken_again_when_due_not_at_the_rescan(
    listener_factory: ListenerFactory,
) -> None:
    """With a 10-minute rescan the thread still takes the failed message when it is back
    (it knows when that is), having left the empty queues alone while it waited; the plain
    listener asked them all along."""
    asked = {
        "plain": receives_while_a_failed_message_waits(listener_factory, None),
        "rescan": receives_while_a_failed_message_waits(listener_factory, 600.0),
    }
    print(f"receives of the empty queues: {asked}")
    # busy rounds (this config has no empty skip) ask the three others: about three rounds
    assert asked["rescan"] <= 4 * 3, asked
    assert asked["plain"] >= 2 * asked["rescan"], asked


def test_a_wake_during_a_round_ends_the_sleep_after_it() -> None:
    signal = WakeSignal()
    round_began = signal.generation
    threading.Thread(target=signal.wake).start()  # the trigger, while the round runs
    time.sleep(0.05)
    started = time.monotonic()
    assert signal.sleep(10, since=round_began) is True
    assert time.monotonic() - started < 5
