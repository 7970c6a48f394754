"""The trigger bus port under a fault plan: publishes and receives that fail.

The wrapper sits on the port, above whatever the backend retries by itself (the Service Bus
SDK retries a failed send twice), so a drawn fault is what the caller sees, once:

* **status** (503/429: the namespace is busy or throttling; 500: an internal error) and
  **timeout**: the call raises and does nothing;
* **lost response**: a publish *is* published and then raises (the caller cannot tell, so a
  retried publish gives a duplicate trigger: harmless, triggers are hints); a receive takes
  (and settles) the messages and then raises, so those triggers are lost: the safety poll
  and the back-off of the listeners must find the work anyway.

Callers treat every bus failure as "no trigger": the publisher logs and answers 202 (the
work is on the queues), the subscriber reopens its subscription after a back-off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from azure.servicebus.exceptions import (
    OperationTimeoutError,
    ServiceBusError,
    ServiceBusServerBusyError,
)

from shared.bus.ports import BusMessage, Subscription, SubscriptionSpec, TriggerBus
from shared.faults.plan import Fault, FaultKind, FaultPlan

T = TypeVar("T")


def _call(
    plan: FaultPlan,
    what: str,
    action: Callable[[], T],
    discard: Callable[[T], object] = lambda _result: None,
) -> T:
    """``action()`` unless the plan draws a fault; ``discard`` gets what a lost answer held."""
    fault = plan.draw()
    if fault is None:
        return action()
    if fault.kind is FaultKind.LOST_RESPONSE:
        discard(action())
        raise OperationTimeoutError(message=f"injected fault: the answer to {what} was lost")
    raise _error(fault, what)


def _error(fault: Fault, what: str) -> ServiceBusError:
    if fault.kind is FaultKind.TIMEOUT:
        return OperationTimeoutError(message=f"injected fault: {what} timed out")
    if fault.status in (503, 429):
        return ServiceBusServerBusyError(message=f"injected fault: {what}: server busy")
    return ServiceBusError(message=f"injected fault: {what}: internal server error")


class FaultySubscription:
    def __init__(self, inner: Subscription, plan: FaultPlan) -> None:
        self._inner = inner
        self._plan = plan

    @property
    def name(self) -> str:
        return self._inner.name

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        what = f"receive on {self.name}"
        return _call(self._plan, what, lambda: self._inner.receive(timeout, max_messages))

    def close(self) -> None:
        self._inner.close()


class FaultyTriggerBus:
    def __init__(self, inner: TriggerBus, plan: FaultPlan) -> None:
        self.inner = inner
        self._plan = plan

    @property
    def topic(self) -> str:
        return self.inner.topic

    def ensure_topic(self) -> None:
        _call(self._plan, "ensure topic", self.inner.ensure_topic)

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None:
        _call(self._plan, f"publish to {self.topic}", lambda: self.inner.publish(body, properties))

    def subscribe(self, spec: SubscriptionSpec) -> Subscription:
        subscription = _call(
            self._plan,
            f"subscribe {spec.name}",
            lambda: self.inner.subscribe(spec),
            discard=lambda opened: opened.close(),
        )
        return FaultySubscription(subscription, self._plan)

    def close(self) -> None:
        self.inner.close()
