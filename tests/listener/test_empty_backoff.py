"""A queue that stays empty is asked less and less often, never less than once per cap."""

from __future__ import annotations

import threading
import time

import pytest

from shared.domain.priority import PRIORITIES
from shared.listener import Lease
from shared.listener.priority import PriorityPlanner
from shared.listener.source import QueueSource
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues

BASE = 0.5
CAP = 8.0


class FakeClock:
    """Monotonic time that moves only when the test (or its handler) says so."""

    def __init__(self) -> None:
        self._now = 1000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


def names(order: list[QueueSource]) -> list[str]:
    return [source.name for source in order]


def test_the_skip_doubles_with_each_empty_answer_up_to_the_cap(queues: MemoryQueues) -> None:
    clock = FakeClock()
    (source,) = make_sources(queues, ("normal",))
    planner = PriorityPlanner(
        [source], share_every=8, empty_recheck=BASE, empty_recheck_max=CAP, clock=clock
    )
    skips = []
    for _ in range(7):
        planner.mark_empty(source)
        waited = 0.0
        while not planner.next_round():  # skipped: an idle round; let time pass in steps
            planner.mark_idle()
            clock.advance(0.25)
            waited += 0.25
        skips.append(waited)
    assert skips == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_slow_rounds_skip_an_empty_queue_more_rounds_each_time_within_the_cap(
    queues: MemoryQueues,
) -> None:
    """Busy rounds 3 s apart (a thread handling a full receive from normal): the time skip
    alone would have run out before every round. The queue is asked in rounds 1, 2 and 4 (skips of
    1 and 2 rounds), then its 4-round skip is cut short by the 8 s cap: every third round."""
    clock = FakeClock()
    high, normal = make_sources(queues, ("high", "normal"))
    planner = PriorityPlanner(
        [high, normal], share_every=100, empty_recheck=BASE, empty_recheck_max=CAP, clock=clock
    )
    asked_in = []
    for number in range(1, 17):
        if high in planner.next_round():
            asked_in.append(number)
            planner.mark_empty(high)
        planner.mark_found(normal)  # normal had messages: a busy round
        clock.advance(3.0)
    assert asked_in == [1, 2, 4, 7, 10, 13, 16]


def test_idle_rounds_do_not_stretch_the_skip(queues: MemoryQueues) -> None:
    """Rounds that found nothing anywhere are spaced by the thread's own back-off: after one,
    a queue is asked again once its time skip is over, not busy rounds later."""
    clock = FakeClock()
    (normal,) = make_sources(queues, ("normal",))
    planner = PriorityPlanner(
        [normal], share_every=8, empty_recheck=BASE, empty_recheck_max=CAP, clock=clock
    )
    for streak in range(1, 6):
        planner.mark_empty(normal)
        planner.mark_idle()
        clock.advance(min(BASE * 2 ** (streak - 1), CAP))
        assert names(planner.next_round()) == ["work-normal-0"]


def test_messages_or_a_trigger_naming_the_queue_start_the_back_off_over(
    queues: MemoryQueues,
) -> None:
    clock = FakeClock()
    high, normal = make_sources(queues, ("high", "normal"))
    planner = PriorityPlanner(
        [high, normal], share_every=8, empty_recheck=BASE, empty_recheck_max=CAP, clock=clock
    )
    for _ in range(4):
        planner.mark_empty(high)
        planner.mark_empty(normal)
    assert planner.next_round() == []
    planner.forget_empty(["work-normal-0"])  # a trigger for normal work only
    assert names(planner.next_round()) == ["work-normal-0"]  # high keeps its back-off
    planner.mark_empty(normal)  # the streak started over: skipped for the base again
    planner.mark_idle()  # (the round found nothing anywhere)
    clock.advance(BASE)
    assert names(planner.next_round()) == ["work-normal-0"]
    planner.mark_found(high)  # a receive found messages on high
    assert names(planner.next_round()) == ["work-high-0", "work-normal-0"]


def test_a_cap_below_the_base_is_refused(queues: MemoryQueues) -> None:
    with pytest.raises(ValueError, match="empty_recheck_max"):
        PriorityPlanner(make_sources(queues), empty_recheck=1.0, empty_recheck_max=0.5)


def test_a_busy_thread_does_not_sweep_the_empty_queues_every_round(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """Twelve queues, work on one of them behind the empty high ones; each message takes a
    (fake) second. With a fixed 0.5 s memory every round would ask all eleven empty queues
    again (40 rounds → 440 empty receives); doubling up to 8 s asks each a handful of times.
    Then work lands on a skipped queue with no trigger: it is found once the cap has passed."""
    clock = FakeClock()
    sources = make_sources(queues, PRIORITIES, partitions=4)
    busy = next(s for s in sources if s.name == "work-normal-0")
    empty = [s for s in sources if s is not busy]
    for i in range(40):
        busy.queue.send(f"item-{i}")
    handled: list[str] = []

    def handler(lease: Lease) -> None:
        clock.advance(1.0)
        handled.append(lease.content)

    config = fast_config(
        batch_size=1,
        handler_parallelism=1,
        visibility_timeout=600,
        empty_recheck_seconds=BASE,
        empty_recheck_max_seconds=CAP,
    )
    listener = listener_factory(sources, handler, config, clock=clock)
    listener.start(threads=1)
    assert wait_until(lambda: len(handled) == 40)

    # 40 fake seconds: asked at 0, 0.5, 1.5, 3.5, 7.5, then once per 8 s: at most 5 + 5 + 1
    asked = {source.name: memq(source).calls["receive"] for source in empty}
    assert all(1 <= count <= 11 for count in asked.values()), asked
    assert sum(asked.values()) <= 11 * 11  # a quarter of the fixed memory's 440

    late = next(s for s in sources if s.name == "work-high-1")
    late.queue.send("late")  # no trigger: only the back-off's cap brings the thread back
    time.sleep(0.3)  # many (real) idle rounds, all within the queue's skip
    assert "late" not in handled
    clock.advance(CAP)
    assert wait_until(lambda: "late" in handled)
