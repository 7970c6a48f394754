"""The trigger subscriber never dies: failed subscribes and receives are retried, bad messages
and failing reactions are logged and skipped, and a reconnect is reported."""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping

from azure.core.exceptions import ResourceNotFoundError

from processor.subscriptions import subscription_specs
from shared.bus.ports import BusMessage, SubscriptionSpec
from shared.bus.subscriber import RECEIVE_SECONDS, TriggerSubscriber
from shared.contracts.messages import GateEvent, TriggerEvent
from shared.listener import Backoff
from tests.processor.deployment import wait_until

FAST_RETRY = Backoff(min_idle=0.01, delta=0.01, max_idle=0.05)


class FlakyBus:
    """Refuses the first subscribe; its subscriptions fail on chosen receives."""

    def __init__(self, receive_failures: list[Exception]) -> None:
        self.inbox: queue.Queue[bytes] = queue.Queue()
        self.subscribes = 0
        self._receive_failures = receive_failures
        self._lock = threading.Lock()

    @property
    def topic(self) -> str:
        return "triggers"

    def ensure_topic(self) -> None:
        pass

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None:
        self.inbox.put(body)

    def subscribe(self, spec: SubscriptionSpec) -> FlakySubscription:
        with self._lock:
            self.subscribes += 1
            if self.subscribes == 1:
                raise ConnectionError("namespace unreachable")
        return FlakySubscription(self, spec.name)

    def next_failure(self) -> Exception | None:
        with self._lock:
            return self._receive_failures.pop(0) if self._receive_failures else None

    def close(self) -> None:
        pass


class FlakySubscription:
    def __init__(self, bus: FlakyBus, name: str) -> None:
        self._bus = bus
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        failure = self._bus.next_failure()
        if failure is not None:
            raise failure
        try:
            return [BusMessage(self._bus.inbox.get(timeout=timeout))]
        except queue.Empty:
            return []

    def close(self) -> None:
        pass


def work_event() -> bytes:
    event = TriggerEvent(
        storage_account="embedded",
        queue_names=["work-normal-0"],
        payload_size=10,
        batch_id="b1",
        priority="normal",
        chunk_count=1,
    )
    return event.to_text().encode()


def test_the_subscriber_survives_failures_and_still_delivers_events() -> None:
    bus = FlakyBus([ConnectionError("link detached"), ResourceNotFoundError("auto-deleted")])
    work: list[str] = []
    gates: list[bool] = []
    reconnects: list[int] = []
    calls = 0

    def on_work(event: TriggerEvent) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a reaction that fails once")
        work.append(event.batch_id)

    subscriber = TriggerSubscriber(
        bus,
        subscription_specs("instance-1", ["normal"], per_instance=True),
        on_work=on_work,
        on_gate=lambda event: gates.append(event.released),
        on_reconnect=lambda: reconnects.append(1),
        receive_seconds=0.05,
        backoff=FAST_RETRY,
    )
    subscriber.start()
    try:
        assert wait_until(lambda: bus.subscribes >= 4, timeout=5)  # refused, then 2 drops
        assert subscriber.wait_ready(timeout=5)
        bus.publish(b"not json at all", {})
        bus.publish(work_event(), {})  # its reaction fails: logged, the thread lives on
        bus.publish(work_event(), {})
        bus.publish(GateEvent(released=False).to_text().encode(), {})
        assert wait_until(lambda: gates == [False] and work == ["b1"], timeout=5)
    finally:
        assert subscriber.stop(timeout=5)
    assert len(reconnects) == 3  # after the refused subscribe and after each failed receive


def test_an_instance_has_one_subscription_with_a_rule_per_priority_and_one_for_the_gate() -> None:
    (mine,) = subscription_specs("host-1-abc", ["high", "low"], per_instance=True)
    (theirs,) = subscription_specs("host-2-def", ["high", "low"], per_instance=True)
    assert mine.name != theirs.name
    assert mine.name.startswith("proc-")
    assert len(mine.name) <= 50
    assert mine.rules == ({"Priority": "high"}, {"Priority": "low"}, {"Kind": "gate"})
    assert mine.matches({"Priority": "low", "Kind": "work"})
    assert not mine.matches({"Priority": "normal", "Kind": "work"})
    assert mine.auto_delete_idle_seconds == 300


def test_shared_subscriptions_stay_one_per_priority() -> None:
    # An instance serving low only must never take a high trigger from a shared subscription.
    shared = subscription_specs("host-1-abc", ["normal", "low"], per_instance=False)
    assert [(s.name, s.rules, s.auto_delete_idle_seconds) for s in shared] == [
        ("processors-normal", ({"Priority": "normal"}, {"Kind": "gate"}), None),
        ("processors-low", ({"Priority": "low"}, {"Kind": "gate"}), None),
    ]


class ForeverSubscription(FlakySubscription):
    """Blocks a receive for its whole timeout unless closed, like every real backend."""

    def __init__(self, bus: FlakyBus, name: str) -> None:
        super().__init__(bus, name)
        self.closed = threading.Event()
        self.timeouts: list[float] = []

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        if self.closed.is_set():
            raise RuntimeError("closed")
        self.timeouts.append(timeout)
        self.closed.wait(timeout)
        return []

    def close(self) -> None:
        self.closed.set()


def test_a_stop_closes_the_subscription_instead_of_waiting_out_a_long_receive() -> None:
    bus = FlakyBus([])
    bus.subscribes = 1  # no refused first subscribe here
    opened: list[ForeverSubscription] = []

    def subscribe(spec: SubscriptionSpec) -> ForeverSubscription:
        opened.append(ForeverSubscription(bus, spec.name))
        return opened[-1]

    bus.subscribe = subscribe  # type: ignore[method-assign]
    subscriber = TriggerSubscriber(
        bus,
        subscription_specs("instance-1", ["high", "normal", "low"], per_instance=True),
        on_work=lambda _event: None,
        on_gate=lambda _event: None,
    )
    subscriber.start()
    assert subscriber.wait_ready(timeout=5)
    assert wait_until(lambda: bool(opened and opened[0].timeouts), timeout=5)

    assert subscriber.stop(timeout=5)
    assert len(opened) == 1  # one subscription for three priorities
    assert opened[0].timeouts == [RECEIVE_SECONDS]  # one long receive, ended by the close
    assert opened[0].closed.is_set()
