"""The in-process trigger bus (all-in-one mode): what the cross-backend contract in
``tests/contract/test_bus_contract.py`` cannot check — threads, closing, auto-delete, limits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from azure.core.exceptions import ResourceNotFoundError

from shared import meter
from shared.bus.in_process import MAX_MESSAGE_BYTES, InProcessSubscription, InProcessTriggerBus
from shared.bus.ports import BusMessage, SubscriptionSpec

HIGH = {"Priority": "high"}


@pytest.fixture
def bus() -> Iterator[InProcessTriggerBus]:
    opened = InProcessTriggerBus("triggers")
    opened.ensure_topic()
    yield opened
    opened.close()


def bodies(messages: list[BusMessage]) -> list[bytes]:
    return [m.body for m in messages]


def test_publish_and_subscribe_need_the_topic() -> None:
    bus = InProcessTriggerBus("triggers")
    with pytest.raises(ResourceNotFoundError, match="ensure_topic"):
        bus.publish(b"x", {})
    with pytest.raises(ResourceNotFoundError, match="ensure_topic"):
        bus.subscribe(SubscriptionSpec("all"))
    bus.ensure_topic()
    bus.ensure_topic()  # idempotent
    assert bus.subscribe(SubscriptionSpec("all")).name == "all"
    assert bus.topic == "triggers"


def test_every_pair_of_the_filter_must_match(bus: InProcessTriggerBus) -> None:
    both = bus.subscribe(SubscriptionSpec("high-gate", ({"Priority": "high", "Kind": "gate"},)))
    bus.publish(b"work", {"Priority": "high", "Kind": "work"})
    bus.publish(b"gate", {"Priority": "high", "Kind": "gate"})
    assert bodies(both.receive(timeout=0)) == [b"gate"]


def test_a_message_published_before_a_subscription_exists_never_reaches_it(
    bus: InProcessTriggerBus,
) -> None:
    bus.publish(b"early", {})
    late = bus.subscribe(SubscriptionSpec("late"))
    assert late.receive(timeout=0) == []


def test_receive_hands_out_in_order_and_at_most_max_messages(bus: InProcessTriggerBus) -> None:
    sub = bus.subscribe(SubscriptionSpec("all"))
    for n in range(5):
        bus.publish(str(n).encode(), {})
    assert bodies(sub.receive(timeout=0, max_messages=3)) == [b"0", b"1", b"2"]
    assert bodies(sub.receive(timeout=0, max_messages=3)) == [b"3", b"4"]
    with pytest.raises(ValueError, match="at least 1"):
        sub.receive(timeout=0, max_messages=0)


def test_subscribing_again_replaces_the_filter_and_keeps_what_is_pending(
    bus: InProcessTriggerBus,
) -> None:
    bus.subscribe(SubscriptionSpec("proc", (HIGH,)))
    bus.publish(b"kept", HIGH)
    sub = bus.subscribe(SubscriptionSpec("proc", ({"Priority": "low"},)))
    bus.publish(b"h", HIGH)
    bus.publish(b"l", {"Priority": "low"})
    assert bodies(sub.receive(timeout=0)) == [b"kept", b"l"]
    assert bus.subscription_names() == ["proc"]


def test_a_blocked_receive_wakes_when_a_message_is_published(bus: InProcessTriggerBus) -> None:
    sub = bus.subscribe(SubscriptionSpec("all"))
    received: list[BusMessage] = []
    waiter = threading.Thread(target=lambda: received.extend(sub.receive(timeout=30)))
    waiter.start()
    time.sleep(0.1)  # let it block
    published = time.monotonic()
    bus.publish(b"wake", HIGH)
    waiter.join(10)
    print(
        f"\nblocked receive returned {1000 * (time.monotonic() - published):.1f} ms after publish"
    )
    assert not waiter.is_alive()
    assert bodies(received) == [b"wake"]


def test_competing_receivers_on_one_subscription_get_each_message_once(
    bus: InProcessTriggerBus,
) -> None:
    receivers = [bus.subscribe(SubscriptionSpec("shared")) for _ in range(4)]
    got: list[bytes] = []
    lock = threading.Lock()
    done = threading.Event()

    def drain(sub: InProcessSubscription) -> None:
        while not done.is_set():
            messages = sub.receive(timeout=0.05, max_messages=3)
            with lock:
                got.extend(bodies(messages))

    threads = [threading.Thread(target=drain, args=(r,)) for r in receivers]
    for thread in threads:
        thread.start()

    def publish_many(prefix: int) -> None:
        for n in range(250):
            bus.publish(f"{prefix}-{n}".encode(), {})

    publishers = [threading.Thread(target=publish_many, args=(p,)) for p in range(4)]
    for thread in publishers:
        thread.start()
    for thread in publishers:
        thread.join()
    deadline = time.monotonic() + 10
    while len(got) < 1000 and time.monotonic() < deadline:
        time.sleep(0.01)
    done.set()
    for thread in threads:
        thread.join(5)

    assert len(got) == 1000
    assert set(got) == {f"{p}-{n}".encode() for p in range(4) for n in range(250)}


def test_closing_a_receiving_end_releases_its_blocked_receive(bus: InProcessTriggerBus) -> None:
    sub = bus.subscribe(SubscriptionSpec("all"))
    results: list[list[BusMessage]] = []
    waiter = threading.Thread(target=lambda: results.append(sub.receive(timeout=30)))
    waiter.start()
    time.sleep(0.1)
    sub.close()
    waiter.join(5)
    assert results == [[]]
    with pytest.raises(RuntimeError, match="closed"):  # a loop over it fails, not spins
        sub.receive(timeout=0)
    assert bus.subscription_names() == ["all"]  # the subscription itself stays


def test_closing_the_bus_releases_every_receiver_and_refuses_more_work() -> None:
    bus = InProcessTriggerBus("triggers")
    bus.ensure_topic()
    subs = [bus.subscribe(SubscriptionSpec(f"s{n}")) for n in range(3)]
    results: list[list[BusMessage]] = []
    waiters = [threading.Thread(target=lambda s=s: results.append(s.receive(30))) for s in subs]
    for waiter in waiters:
        waiter.start()
    time.sleep(0.1)
    bus.close()
    for waiter in waiters:
        waiter.join(5)
    assert results == [[], [], []]
    with pytest.raises(RuntimeError, match="closed"):
        bus.publish(b"late", {})
    with pytest.raises(RuntimeError, match="closed"):
        bus.subscribe(SubscriptionSpec("late"))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_idle_subscription_is_deleted_after_its_limit() -> None:
    clock = FakeClock()
    bus = InProcessTriggerBus("triggers", clock=clock)
    bus.ensure_topic()
    gone = bus.subscribe(SubscriptionSpec("proc-a", (HIGH,), auto_delete_idle_seconds=300))
    alive = bus.subscribe(SubscriptionSpec("proc-b", (HIGH,), auto_delete_idle_seconds=300))
    forever = bus.subscribe(SubscriptionSpec("processors-high", (HIGH,)))
    bus.publish(b"one", HIGH)

    clock.now += 200
    assert bodies(alive.receive(timeout=0)) == [b"one"]  # receiving keeps it alive
    clock.now += 200
    bus.publish(b"two", HIGH)  # proc-a idle 400 s > 300 s: dropped, with its copies

    assert bus.subscription_names() == ["proc-b", "processors-high"]
    with pytest.raises(ResourceNotFoundError, match="auto_delete_idle_seconds"):
        gone.receive(timeout=0)
    assert bodies(alive.receive(timeout=0)) == [b"two"]
    assert bodies(forever.receive(timeout=0)) == [b"one", b"two"]
    # the owner reopening it (as the trigger subscriber does) starts afresh
    again = bus.subscribe(SubscriptionSpec("proc-a", (HIGH,), auto_delete_idle_seconds=300))
    bus.publish(b"three", HIGH)
    assert bodies(again.receive(timeout=0)) == [b"three"]


def test_a_receiver_blocked_on_a_subscription_keeps_it_alive() -> None:
    clock = FakeClock()
    bus = InProcessTriggerBus("triggers", clock=clock)
    bus.ensure_topic()
    sub = bus.subscribe(SubscriptionSpec("proc", (HIGH,), auto_delete_idle_seconds=300))
    received: list[BusMessage] = []
    waiter = threading.Thread(target=lambda: received.extend(sub.receive(timeout=30)))
    waiter.start()
    time.sleep(0.1)
    clock.now += 1000  # far past the limit, but someone is waiting on it
    bus.publish(b"still here", HIGH)
    waiter.join(5)
    assert bodies(received) == [b"still here"]
    assert bus.subscription_names() == ["proc"]


def test_limits_and_property_types(bus: InProcessTriggerBus) -> None:
    sub = bus.subscribe(SubscriptionSpec("all"))
    bus.publish(b"x" * MAX_MESSAGE_BYTES, {})
    with pytest.raises(ValueError, match="exceeds"):
        bus.publish(b"x" * (MAX_MESSAGE_BYTES + 1), {})
    with pytest.raises(TypeError, match="str to str"):
        bus.publish(b"x", {"Count": 3})  # type: ignore[dict-item]
    assert [len(m.body) for m in sub.receive(timeout=0)] == [MAX_MESSAGE_BYTES]


def test_each_copy_has_its_own_properties(bus: InProcessTriggerBus) -> None:
    first, second = bus.subscribe(SubscriptionSpec("a")), bus.subscribe(SubscriptionSpec("b"))
    properties = {"Priority": "high"}
    bus.publish(b"x", properties)
    properties["Priority"] = "changed by the publisher afterwards"
    (one,) = first.receive(timeout=0)
    (other,) = second.receive(timeout=0)
    assert one.properties == other.properties == {"Priority": "high"}
    assert one.properties is not other.properties
    assert one.message_id == other.message_id  # one message, two copies


def test_an_in_memory_publish_costs_no_request(bus: InProcessTriggerBus) -> None:
    sub = bus.subscribe(SubscriptionSpec("all"))
    before = meter.snapshot()
    bus.publish(b"free", {})
    sub.receive(timeout=0)
    assert meter.diff(meter.snapshot(), before) == {}
