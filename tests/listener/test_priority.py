"""Priority order, every partition read, and a minimum share for low."""

from __future__ import annotations

from collections import Counter

from shared.domain.priority import PRIORITIES
from shared.listener import Lease
from shared.listener.priority import PriorityPlanner
from shared.listener.source import QueueSource
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, wait_until
from tests.support.memory_queue import MemoryQueues

ALL = PRIORITIES


def names(order: list[QueueSource]) -> list[str]:
    return [source.name for source in order]


def test_a_round_visits_high_then_normal_then_low(queues: MemoryQueues) -> None:
    planner = PriorityPlanner(make_sources(queues, ("low", "high", "normal")), share_every=8)
    order = names(planner.next_round())
    assert [name.split("-")[1] for name in order] == ["high", "normal", "low"]


def test_every_partition_is_first_in_turn(queues: MemoryQueues) -> None:
    planner = PriorityPlanner(make_sources(queues, ("high",), partitions=4), share_every=8)
    rounds = [names(planner.next_round()) for _ in range(8)]
    assert all(sorted(r) == [f"work-high-{p}" for p in range(4)] for r in rounds)
    firsts = Counter(r[0] for r in rounds)
    assert firsts == {f"work-high-{p}": 2 for p in range(4)}


def test_share_rounds_favour_low_then_normal(queues: MemoryQueues) -> None:
    planner = PriorityPlanner(make_sources(queues, ALL), share_every=4)
    firsts = [names(planner.next_round())[0].split("-")[1] for _ in range(16)]
    # rounds 4, 8, 12, 16 are share rounds: low, normal, low, normal; the rest start high
    assert firsts[:8] == ["high"] * 3 + ["low"] + ["high"] * 3 + ["normal"]
    assert firsts[8:] == firsts[:8]


def test_minimum_share_bound_holds_with_the_defaults(queues: MemoryQueues) -> None:
    """Under load everywhere, each lower priority is first in >= 1 round of N*(levels-1)."""
    planner = PriorityPlanner(make_sources(queues, ALL), share_every=8)
    firsts = Counter(names(planner.next_round())[0].split("-")[1] for _ in range(1600))
    assert firsts["low"] >= 1600 // 16
    assert firsts["normal"] >= 1600 // 16
    assert firsts["high"] == 1600 * 7 // 8


def test_share_rounds_rotate_the_partitions_of_the_favoured_priority(
    queues: MemoryQueues,
) -> None:
    planner = PriorityPlanner(make_sources(queues, ("high", "low"), partitions=4), share_every=4)
    rounds = [names(planner.next_round())[0] for _ in range(64)]
    share_firsts = rounds[3::4]  # rounds 4, 8, 12, …
    regular_firsts = [name for i, name in enumerate(rounds) if i % 4 != 3]
    assert Counter(share_firsts) == {f"work-low-{p}": 4 for p in range(4)}
    assert Counter(regular_firsts) == {f"work-high-{p}": 12 for p in range(4)}


def test_one_priority_never_has_share_rounds(queues: MemoryQueues) -> None:
    planner = PriorityPlanner(make_sources(queues, ("normal",)), share_every=2)
    assert all(names(planner.next_round()) == ["work-normal-0"] for _ in range(6))


def test_recently_empty_queues_are_skipped_until_forgotten(queues: MemoryQueues) -> None:
    now = [100.0]
    sources = make_sources(queues, ("high", "low"))
    planner = PriorityPlanner(sources, share_every=8, empty_recheck=0.5, clock=lambda: now[0])
    planner.mark_empty(sources[0])
    assert names(planner.next_round()) == ["work-low-0"]
    now[0] += 0.6
    assert names(planner.next_round()) == ["work-high-0", "work-low-0"]
    planner.mark_empty(sources[0])
    planner.forget_empty()  # a trigger: look everywhere at once
    assert names(planner.next_round()) == ["work-high-0", "work-low-0"]


def test_the_listener_takes_high_before_normal_before_low(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ALL, partitions=2)
    for source in reversed(sources):  # low sent first: arrival order must not matter
        for i in range(5):
            source.queue.send(f"{source.priority}-{i}")
    handled: list[str] = []
    listener = listener_factory(
        sources,
        lambda lease: handled.append(lease.content.split("-")[0]),
        fast_config(batch_size=5, handler_parallelism=1, low_share_every=100),
    )
    listener.start(threads=1)
    assert wait_until(lambda: len(handled) == 30)
    assert handled == ["high"] * 10 + ["normal"] * 10 + ["low"] * 10


def test_low_progresses_under_a_steady_high_load(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    """Every high message handled puts another one back: high is never empty."""
    high, low = make_sources(queues, ("high", "low"))
    for i in range(10):
        high.queue.send(f"high-{i}")
    for i in range(3):
        low.queue.send(f"low-{i}")
    handled: list[str] = []

    def handler(lease: Lease) -> None:
        priority = lease.content.split("-")[0]
        handled.append(priority)
        if priority == "high":
            high.queue.send("high-again")

    listener = listener_factory(
        [high, low], handler, fast_config(batch_size=1, handler_parallelism=1, low_share_every=4)
    )
    listener.start(threads=1)
    assert wait_until(lambda: handled.count("low") == 3)
    listener.stop(timeout=5)
    # one thread, one message a round: every 4th round is low's share
    assert handled[:12] == (["high"] * 3 + ["low"]) * 3
    assert high.queue.approximate_count() > 0  # high was never drained
