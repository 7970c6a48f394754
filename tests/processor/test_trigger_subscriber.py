"""The trigger subscriber never dies: failed subscribes and receives are retried, bad messages
and failing reactions are logged and skipped, and a reconnect is reported."""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping

from azure.core.exceptions import ResourceNotFoundError

from processor.trigger_subscriber import TriggerSubscriber, subscription_spec
from shared.bus.ports import BusMessage, SubscriptionSpec
from shared.listener import Backoff
from shared.messages import GateEvent, TriggerEvent
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
        [subscription_spec("instance-1", "normal", per_instance=True)],
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


def test_subscription_names_per_instance_and_shared() -> None:
    mine = subscription_spec("host-1-abc", "high", per_instance=True)
    theirs = subscription_spec("host-2-def", "high", per_instance=True)
    assert mine.name != theirs.name
    assert mine.name.startswith("proc-high-")
    assert len(mine.name) <= 50
    assert mine.filter == {"Priority": "high"}
    assert mine.auto_delete_idle_seconds == 300
    shared = subscription_spec("host-1-abc", "low", per_instance=False)
    assert (shared.name, shared.filter, shared.auto_delete_idle_seconds) == (
        "processors-low",
        {"Priority": "low"},
        None,
    )
