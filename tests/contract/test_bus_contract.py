"""One trigger-bus contract, three backends: every test runs on each of them.

* ``embedded``: the local-folder bus (``shared.bus.embedded``);
* ``in-process``: the in-memory subject of all-in-one mode (``shared.bus.in_process``);
* ``servicebus``: the azure-servicebus adapter over the test broker (the real SDK on the
  wire). The adapter cannot create subscriptions over AMQP, so the broker pre-creates each
  one with its filter before the test subscribes, as Bicep does in Azure.

What a processor relies on, whatever the backend: a subscription receives only what its
correlation filters match (any of several, once), every matching subscription gets its own
copy, a receive blocks until a message comes or its timeout passes (then ``[]``), a close
from another thread ends a blocked receive at once, properties come back ``str`` to
``str``, the body comes back byte for byte, and each copy is handed out once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from shared.bus.ports import BusMessage, Subscription, SubscriptionSpec, TriggerBus
from tests.support.servicebus_broker import ServiceBusBroker

TOPIC = "triggers"
HIGH = {"Priority": "high"}


class BusUnderTest:
    """A bus and a way to open a subscription on it (pre-created where the backend needs)."""

    def __init__(self, bus: TriggerBus, broker: ServiceBusBroker | None = None) -> None:
        self.bus = bus
        self._broker = broker
        bus.ensure_topic()

    def subscribe(
        self,
        name: str,
        filter: Mapping[str, str] | None = None,
        *,
        filters: tuple[Mapping[str, str], ...] = (),
    ) -> Subscription:
        if self._broker is not None:
            self._broker.add_subscription(TOPIC, name, filter, filters=filters)
        return self.bus.subscribe(SubscriptionSpec(name, filters or (dict(filter or {}),)))


@pytest.fixture(params=["embedded", "in-process", "servicebus"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BusUnderTest]:
    bus: TriggerBus
    broker: ServiceBusBroker | None = None
    if request.param == "servicebus":
        from shared.bus.servicebus import ServiceBusTriggerBus

        broker = request.getfixturevalue("servicebus_broker")
        broker.add_topic(TOPIC)
        bus = ServiceBusTriggerBus(TOPIC, connection_string=broker.connection_string)
    elif request.param == "embedded":
        from shared.bus.embedded import EmbeddedTriggerBus

        bus = EmbeddedTriggerBus(tmp_path / "bus", TOPIC)
    else:
        from shared.bus.in_process import InProcessTriggerBus

        bus = InProcessTriggerBus(TOPIC)
    yield BusUnderTest(bus, broker)
    bus.close()


def receive_until(subscription: Subscription, count: int, timeout: float = 10) -> list[BusMessage]:
    """Receive until ``count`` messages came or ``timeout`` passed (some backends hand out
    one message per receive)."""
    received: list[BusMessage] = []
    deadline = time.monotonic() + timeout
    while len(received) < count and time.monotonic() < deadline:
        received += subscription.receive(timeout=max(deadline - time.monotonic(), 0.0))
    return received


def bodies(messages: list[BusMessage]) -> list[bytes]:
    return [m.body for m in messages]


def test_a_subscription_receives_only_what_its_priority_filter_matches(
    target: BusUnderTest,
) -> None:
    high = target.subscribe("high", HIGH)
    low = target.subscribe("low", {"Priority": "low"})
    everything = target.subscribe("all")

    target.bus.publish(b"urgent", {"Priority": "high", "Kind": "work"})
    target.bus.publish(b"routine", {"Priority": "normal", "Kind": "work"})

    assert bodies(receive_until(high, 1)) == [b"urgent"]
    assert sorted(bodies(receive_until(everything, 2))) == [b"routine", b"urgent"]
    assert high.receive(timeout=0.5) == []
    assert low.receive(timeout=0.5) == []


def test_a_message_fans_out_to_every_matching_subscription(target: BusUnderTest) -> None:
    instances = [target.subscribe(f"proc-high-{n}", HIGH) for n in range(3)]
    other = target.subscribe("proc-low-0", {"Priority": "low"})

    target.bus.publish(b"wake up", HIGH)

    copies = [receive_until(instance, 1) for instance in instances]
    assert [bodies(c) for c in copies] == [[b"wake up"]] * 3
    assert len({c[0].message_id for c in copies}) == 1  # one message, three copies
    assert other.receive(timeout=0.5) == []


def test_a_receive_with_nothing_to_get_returns_empty_at_its_timeout(
    target: BusUnderTest,
) -> None:
    subscription = target.subscribe("quiet")
    started = time.monotonic()
    assert subscription.receive(timeout=0.5) == []
    print(f"\nempty receive(timeout=0.5) returned after {time.monotonic() - started:.2f} s")


def test_a_blocked_receive_returns_the_message_published_meanwhile(target: BusUnderTest) -> None:
    subscription = target.subscribe("waiting", HIGH)
    received: list[BusMessage] = []
    waiter = threading.Thread(target=lambda: received.extend(receive_until(subscription, 1, 30)))
    waiter.start()
    time.sleep(0.3)  # the receiver is blocked by now
    published = time.monotonic()
    target.bus.publish(b"late", HIGH)
    waiter.join(30)
    print(f"\nthe blocked receiver got it {1000 * (time.monotonic() - published):.0f} ms later")
    assert bodies(received) == [b"late"]


def test_properties_come_back_str_to_str_and_the_body_byte_for_byte(
    target: BusUnderTest,
) -> None:
    subscription = target.subscribe("props")
    body = bytes(range(256)) + '{"batch_id": "b-42", "note": "façade ✓"}'.encode()

    target.bus.publish(body, {"Priority": "high", "Kind": "work", "BatchId": "b-42"})

    (message,) = receive_until(subscription, 1)
    assert message.body == body
    assert dict(message.properties) == {"Priority": "high", "Kind": "work", "BatchId": "b-42"}
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in message.properties.items())
    assert message.message_id


def test_each_message_is_handed_out_once(target: BusUnderTest) -> None:
    subscription = target.subscribe("once")
    target.bus.publish(b"only once", {})
    assert bodies(receive_until(subscription, 1)) == [b"only once"]
    assert subscription.receive(timeout=1) == []  # settled on receipt: never redelivered


def test_receivers_sharing_a_subscription_each_get_different_messages(
    target: BusUnderTest,
) -> None:
    first = target.subscribe("shared")
    second = target.bus.subscribe(SubscriptionSpec("shared"))
    sent = [f"m{n}".encode() for n in range(6)]
    for body in sent:
        target.bus.publish(body, {})

    got = bodies(receive_until(first, 3))
    got += bodies(receive_until(second, len(sent) - len(got)))

    assert sorted(got) == sorted(sent)  # each exactly once between the two


def test_a_subscription_with_several_filters_receives_what_any_of_them_matches_once(
    target: BusUnderTest,
) -> None:
    # One subscription per processor instance: a rule per served priority, one for the gate.
    instance = target.subscribe(
        "proc-one", filters=({"Priority": "high"}, {"Priority": "low"}, {"Kind": "gate"})
    )

    target.bus.publish(b"high work", {"Priority": "high", "Kind": "work"})
    target.bus.publish(b"normal work", {"Priority": "normal", "Kind": "work"})
    target.bus.publish(b"low work", {"Priority": "low", "Kind": "work"})
    target.bus.publish(b"gate", {"Kind": "gate"})
    target.bus.publish(b"high gate", {"Priority": "high", "Kind": "gate"})  # two rules match

    received = receive_until(instance, 4)
    assert sorted(bodies(received)) == [b"gate", b"high gate", b"high work", b"low work"]
    assert instance.receive(timeout=0.5) == []  # not the normal one; "high gate" only once


def test_a_close_from_another_thread_ends_a_blocked_receive_at_once(
    target: BusUnderTest,
) -> None:
    subscription = target.subscribe("long-wait", HIGH)
    outcome: list[list[BusMessage]] = []
    waiter = threading.Thread(target=lambda: outcome.append(subscription.receive(timeout=60)))
    waiter.start()
    time.sleep(0.5)  # blocked by now, for up to a minute
    closed_at = time.monotonic()
    subscription.close()
    waiter.join(10)
    waited = time.monotonic() - closed_at
    print(f"\na receive(timeout=60) returned {1000 * waited:.1f} ms after close()")
    assert not waiter.is_alive()
    assert outcome == [[]]
    assert waited < 1.0  # a stop may take ~1 s at most; this is typically milliseconds


def test_a_closed_end_refuses_to_receive_and_closes_again_harmlessly(
    target: BusUnderTest,
) -> None:
    subscription = target.subscribe("closed", HIGH)
    subscription.close()
    subscription.close()
    with pytest.raises(RuntimeError, match="closed"):
        subscription.receive(timeout=0.1)


def test_a_message_published_after_a_close_waits_for_the_next_receiver(
    target: BusUnderTest,
) -> None:
    first = target.subscribe("handover", HIGH)
    waiter = threading.Thread(target=lambda: first.receive(timeout=60))
    waiter.start()
    time.sleep(0.5)
    first.close()
    waiter.join(10)

    target.bus.publish(b"for whoever comes next", HIGH)

    second = target.bus.subscribe(SubscriptionSpec("handover", (HIGH,)))
    assert bodies(receive_until(second, 1)) == [b"for whoever comes next"]
