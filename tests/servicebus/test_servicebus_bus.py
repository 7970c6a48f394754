"""The Service Bus trigger bus, end to end through the real SDK.

Each contract test runs on two targets: the test broker (always), and a live namespace when
``BILLING_TEST_SERVICEBUS_CONNECTION`` is set (see ``tests/servicebus/README.md``). The
restart and refused-connection tests need a broker the test controls (or none at all).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping

import pytest
from azure.servicebus.exceptions import ServiceBusConnectionError
from pydantic import SecretStr

from shared import meter
from shared.bus.ports import BusMessage, Subscription, SubscriptionSpec
from shared.bus.servicebus import ServiceBusTriggerBus
from shared.settings import Settings
from tests.support.servicebus_broker import ServiceBusBroker

LIVE_CONNECTION_ENV = "BILLING_TEST_SERVICEBUS_CONNECTION"
LIVE_TOPIC_ENV = "BILLING_TEST_SERVICEBUS_TOPIC"
#: never the deployed "triggers" topic: a test's triggers would wake real processors
LIVE_TOPIC = "triggers-test"
TOPIC = "triggers"


class BusTarget:
    """Where the buses of a test connect, and how their subscriptions come to exist."""

    def __init__(self, connection_string: str, topic: str, broker: ServiceBusBroker | None) -> None:
        self.connection_string = connection_string
        self.topic = topic
        self.broker = broker
        self.emulator = "usedevelopmentemulator=true" in connection_string.lower()
        self._run = uuid.uuid4().hex[:8]
        self._buses: list[ServiceBusTriggerBus] = []

    def bus(self) -> ServiceBusTriggerBus:
        # A live namespace (not the emulator) creates entities through the administration
        # client; the broker and the emulator have them declared up front.
        manage = self.broker is None and not self.emulator
        bus = ServiceBusTriggerBus(
            self.topic, connection_string=self.connection_string, manage_entities=manage
        )
        self._buses.append(bus)
        bus.ensure_topic()
        return bus

    def subscribe(
        self, bus: ServiceBusTriggerBus, name: str, filter: Mapping[str, str] | None = None
    ) -> Subscription:
        if self.broker is not None:
            self.broker.add_subscription(self.topic, name, filter)
            return bus.subscribe(SubscriptionSpec(name, (dict(filter or {}),)))
        if self.emulator:  # fixed names from the emulator's Config.json; start them empty
            subscription = bus.subscribe(SubscriptionSpec(name, (dict(filter or {}),)))
            while subscription.receive(timeout=0.5):
                pass
            return subscription
        unique = f"{name}-{self._run}"  # a fresh subscription per run, gone 5 minutes after
        return bus.subscribe(SubscriptionSpec(unique, (dict(filter or {}),), 300))

    def close(self) -> None:
        for bus in self._buses:
            bus.close()


@pytest.fixture(params=["broker", "live"])
def target(request: pytest.FixtureRequest) -> Iterator[BusTarget]:
    if request.param == "live":
        connection = os.environ.get(LIVE_CONNECTION_ENV)
        if not connection:
            pytest.skip(f"set {LIVE_CONNECTION_ENV} to run against a live namespace or emulator")
        bus_target = BusTarget(connection, os.environ.get(LIVE_TOPIC_ENV, LIVE_TOPIC), broker=None)
    else:
        broker: ServiceBusBroker = request.getfixturevalue("servicebus_broker")
        broker.add_topic(TOPIC)
        bus_target = BusTarget(broker.connection_string, TOPIC, broker)
    yield bus_target
    bus_target.close()


def receive_until(subscription: Subscription, count: int, timeout: float = 10) -> list[BusMessage]:
    """Receive until ``count`` messages came or ``timeout`` passed (messages may trickle)."""
    received: list[BusMessage] = []
    deadline = time.monotonic() + timeout
    while len(received) < count and time.monotonic() < deadline:
        received += subscription.receive(timeout=deadline - time.monotonic())
    return received


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def test_a_subscription_receives_only_what_its_filter_matches(target: BusTarget) -> None:
    bus = target.bus()
    high = target.subscribe(bus, "high", {"Priority": "high"})
    every = target.subscribe(bus, "all")

    bus.publish(b"urgent", {"Priority": "high"})
    bus.publish(b"routine", {"Priority": "normal"})

    assert [m.body for m in receive_until(high, 1)] == [b"urgent"]
    assert sorted(m.body for m in receive_until(every, 2)) == [b"routine", b"urgent"]
    assert high.receive(timeout=0.5) == []


def test_a_trigger_fans_out_to_every_matching_subscription(target: BusTarget) -> None:
    bus = target.bus()
    first = target.subscribe(bus, "fanout-a", {"Priority": "high"})
    second = target.subscribe(bus, "fanout-b", {"Priority": "high"})

    bus.publish(b"wake up", {"Priority": "high"})

    assert [m.body for m in receive_until(first, 1)] == [b"wake up"]
    assert [m.body for m in receive_until(second, 1)] == [b"wake up"]


def test_received_properties_are_str_not_the_sdks_bytes(target: BusTarget) -> None:
    bus = target.bus()
    subscription = target.subscribe(bus, "props")

    bus.publish(b"{}", {"Priority": "high", "BatchId": "b-42"})

    (message,) = receive_until(subscription, 1)
    assert message.properties == {"Priority": "high", "BatchId": "b-42"}
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in message.properties.items())
    assert message.body == b"{}"
    assert message.message_id
    assert message.delivery_count == 0


def test_what_receive_returns_is_completed(target: BusTarget) -> None:
    bus = target.bus()
    subscription = target.subscribe(bus, "complete")

    bus.publish(b"once", {})

    assert [m.body for m in receive_until(subscription, 1)] == [b"once"]
    assert subscription.receive(timeout=1) == []  # not redelivered
    if target.broker is not None:
        assert target.broker.messages(target.topic, "complete") == []


def test_a_burst_of_triggers_comes_one_per_receive(target: BusTarget) -> None:
    # One per call so that a wake-up never waits for the rest of a batch (the SDK would
    # linger 0.2 s for them); the others wait at the broker, unlocked, for the next calls.
    bus = target.bus()
    subscription = target.subscribe(bus, "burst")
    for n in range(3):
        bus.publish(f"t{n}".encode(), {})

    calls = [subscription.receive(timeout=5, max_messages=32) for _ in range(3)]

    assert [len(received) for received in calls] == [1, 1, 1]
    assert sorted(m.body for received in calls for m in received) == [b"t0", b"t1", b"t2"]
    assert subscription.receive(timeout=0.5) == []


def test_publish_and_receive_are_metered(target: BusTarget) -> None:
    bus = target.bus()
    subscription = target.subscribe(bus, "metered")
    before = meter.snapshot()

    bus.publish(b"counted", {})
    receive_until(subscription, 1)

    counted = meter.diff(meter.snapshot(), before)
    assert counted["bus.send"] == 1
    assert counted["bus.receive"] >= 1


# Down 0 s: the SDK's own retry reconnects. Down 3 s: longer than those retries (about
# 1.2 s by default here), so the SDK gives up and the subscription itself must reconnect.
@pytest.mark.parametrize("downtime", [0.0, 3.0])
def test_a_waiting_receiver_recovers_after_the_broker_restarts(
    servicebus_broker: ServiceBusBroker, downtime: float
) -> None:
    broker = servicebus_broker
    broker.add_topic(TOPIC)
    broker.add_subscription(TOPIC, "wake")
    target = BusTarget(broker.connection_string, TOPIC, broker)
    publisher, consumer = target.bus(), target.bus()
    subscription = consumer.subscribe(SubscriptionSpec("wake"))
    received: list[BusMessage] = []

    def wait_for_a_trigger() -> None:
        deadline = time.monotonic() + 30
        while not received and time.monotonic() < deadline:
            received.extend(subscription.receive(timeout=2))

    waiter = threading.Thread(target=wait_for_a_trigger)
    waiter.start()
    try:
        wait_until(lambda: broker.waiting_receivers(TOPIC, "wake") > 0, "the receiver waits")
        broker.stop()  # every connection dropped without a goodbye
        time.sleep(downtime)
        broker.start()
        wait_until(lambda: broker.waiting_receivers(TOPIC, "wake") > 0, "the receiver is back")
        published = time.monotonic()
        publisher.publish(b"after the restart", {"Priority": "high"})
        waiter.join(30)
        print(f"trigger received {1000 * (time.monotonic() - published):.0f} ms after publish")
    finally:
        waiter.join(30)
        target.close()
    assert [m.body for m in received] == [b"after the restart"]


def test_a_refused_connection_fails_after_the_configured_retries() -> None:
    # A listener that accepts and hangs up at once counts the SDK's connection attempts.
    attempts = 0
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        host, port = listener.getsockname()

        def hang_up() -> None:
            nonlocal attempts
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                attempts += 1
                connection.close()

        threading.Thread(target=hang_up, daemon=True).start()
        connection_string = (
            f"Endpoint=sb://{host}:{port};SharedAccessKeyName=k;SharedAccessKey=v;"
            "UseDevelopmentEmulator=true"
        )
        bus = ServiceBusTriggerBus(TOPIC, connection_string=connection_string, retry_total=2)
        with pytest.raises(ServiceBusConnectionError):
            bus.publish(b"nowhere", {})
        bus.close()
    assert attempts == 3  # the first try and two retries


def test_nothing_listening_fails_fast() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bus = ServiceBusTriggerBus(
        TOPIC,
        connection_string=f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=k;"
        "SharedAccessKey=v;UseDevelopmentEmulator=true",
    )
    started = time.monotonic()
    with pytest.raises(ServiceBusConnectionError):
        bus.publish(b"nowhere", {})
    elapsed = time.monotonic() - started
    bus.close()
    print(f"refused connection reported after {elapsed:.2f} s (the SDK's default: about 11 s)")
    assert elapsed < 6  # generous; the default retry policy would take about 11 s


def test_from_settings_connects_with_the_connection_string(
    servicebus_broker: ServiceBusBroker,
) -> None:
    servicebus_broker.add_topic("from-settings")
    servicebus_broker.add_subscription("from-settings", "all")
    settings = Settings(
        servicebus_connection_string=SecretStr(servicebus_broker.connection_string),
        trigger_topic="from-settings",
    )
    bus = ServiceBusTriggerBus.from_settings(settings)
    try:
        subscription = bus.subscribe(SubscriptionSpec("all"))
        bus.publish(b"configured", {})
        assert [m.body for m in receive_until(subscription, 1)] == [b"configured"]
    finally:
        bus.close()


def test_a_bus_needs_somewhere_to_connect() -> None:
    with pytest.raises(ValueError, match="connection string or a fully qualified namespace"):
        ServiceBusTriggerBus(TOPIC)
