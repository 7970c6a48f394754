"""The trigger bus port: a topic whose subscriptions filter on application properties.

A Service Bus topic pushes a *trigger event* to processors so they need not poll
(docs/patterns.md, "the push trigger"); subscriptions filter on a ``Priority`` property;
the release gate broadcasts on the same topic. Three backends implement this port:
``shared.bus.servicebus`` (the azure-servicebus SDK), ``shared.bus.embedded`` (a local
folder, no server) and ``shared.bus.in_process`` (memory, for all-in-one mode); the contract
suite ``tests/contract/test_bus_contract.py`` holds them to the same behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class BusMessage:
    """A message as a subscriber sees it. Properties are always ``str`` to ``str``.

    Backends normalise what their transport gives them (the Service Bus SDK returns
    ``bytes`` keys and values for application properties) so callers never have to.
    """

    body: bytes
    properties: Mapping[str, str] = field(default_factory=dict)
    message_id: str = ""
    delivery_count: int = 0


#: A correlation filter: application properties a message must carry, all of them.
CorrelationFilter = Mapping[str, str]


@dataclass(frozen=True)
class SubscriptionSpec:
    """A named subscription and the correlation filters (``rules``) that select its messages.

    A message that matches *any* rule is delivered, once (Service Bus ORs a subscription's
    rules): one subscription per processor instance hears every priority it serves. Every
    pair of a rule must match; the default, one empty rule, receives everything.

    ``auto_delete_idle_seconds`` asks the backend to drop the subscription when its owner has
    been gone that long (per-instance subscriptions of processors, so that every idle
    instance wakes on a trigger).
    """

    name: str
    rules: tuple[CorrelationFilter, ...] = ({},)
    auto_delete_idle_seconds: int | None = None

    def __post_init__(self) -> None:
        if not self.rules:
            raise ValueError(f"subscription {self.name!r}: give at least one rule")

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether a message with these application properties reaches the subscription."""
        return any(
            all(properties.get(key) == value for key, value in rule.items()) for rule in self.rules
        )


class Subscription(Protocol):
    """A receiving end of the topic.

    :meth:`close` may be called from any thread, also while another thread is blocked in
    :meth:`receive`: that receive then returns ``[]`` promptly (milliseconds, not its
    timeout). This is what lets a receiver block for a long time, which costs nothing on
    an idle bus, and still stop at once. Closing twice is harmless.
    """

    @property
    def name(self) -> str: ...

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        """Block up to ``timeout`` seconds for at least one message; settle what is returned.

        Trigger messages are hints (the queues hold the truth), so messages are completed
        as they are handed out: a processor that dies after receiving one loses nothing.
        Returns ``[]`` at the timeout or when the end is closed meanwhile; raises
        ``RuntimeError`` on an end closed before the call (a loop over it fails, not spins).
        """
        ...

    def close(self) -> None:
        """Stop receiving here (waking a blocked receive); the subscription itself stays."""
        ...


class TriggerBus(Protocol):
    """Publish to the topic and open subscriptions on it."""

    @property
    def topic(self) -> str: ...

    def ensure_topic(self) -> None:
        """Create the topic if the backend can (idempotent)."""
        ...

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None: ...

    def subscribe(self, spec: SubscriptionSpec) -> Subscription:
        """Open (creating if the backend can) the subscription ``spec`` names."""
        ...

    def close(self) -> None: ...
