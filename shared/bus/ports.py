"""The trigger bus port: a topic whose subscriptions filter on application properties.

Seed 000 uses a Service Bus topic to push a *trigger event* to processors so they need not
poll; seed 003 filters subscriptions on a ``Priority`` property; seed 002 broadcasts the
release gate on the same kind of topic. Two backends implement this port:
``shared.bus.servicebus`` (the azure-servicebus SDK) and ``shared.bus.embedded`` (a local
folder, no server).
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


@dataclass(frozen=True)
class SubscriptionSpec:
    """A named subscription and its correlation filter (all pairs must match).

    An empty filter receives everything. ``auto_delete_idle_seconds`` asks the backend to
    drop the subscription when its owner has been gone that long (per-instance subscriptions
    of processors, so that every idle instance wakes on a trigger).
    """

    name: str
    filter: Mapping[str, str] = field(default_factory=dict)
    auto_delete_idle_seconds: int | None = None


class Subscription(Protocol):
    """A receiving end of the topic."""

    @property
    def name(self) -> str: ...

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        """Block up to ``timeout`` seconds for at least one message; settle what is returned.

        Trigger messages are hints (the queues hold the truth), so messages are completed
        as they are handed out: a processor that dies after receiving one loses nothing.
        """
        ...

    def close(self) -> None: ...


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
