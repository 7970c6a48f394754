"""Which trigger subscriptions a processor instance listens on.

**Fan-out.** A topic subscription is a queue of its own: every message goes to *one* of the
receivers of a subscription. For every idle processor to wake, each instance needs a
subscription of its own: ``proc-<instance digest>``, with one correlation rule per served
priority (``Priority=p``) and one for the gate (``Kind=gate``) — Service Bus delivers a
message when any rule matches, once — and auto-delete-on-idle so that the subscriptions of
instances that died without cleaning up disappear by themselves
(:func:`subscription_specs`). One subscription, not one per priority: one receiving thread
and a third of the receive calls.

Creating subscriptions needs management rights. On Service Bus without
``BILLING_SERVICEBUS_MANAGE_ENTITIES`` the adapter cannot create them, so every instance
shares the Bicep-declared ``processors-<priority>``, one per served priority: a shared
subscription must hold only priorities that *every* instance reading it serves, or an
instance serving low only could take (and waste) a high trigger. Then one instance wakes per
trigger and the others find the work through their own dequeue threads' back-off or their
safety poll.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from shared.bus.ports import SubscriptionSpec
from shared.contracts.messages import PRIORITY_PROPERTY
from shared.coordination.gate import GATE_PROPERTIES
from shared.domain.priority import Priority
from shared.settings import Settings

#: Service Bus's smallest auto-delete-on-idle is 5 minutes; a live receiver keeps it alive
#: (a receive call at least every :data:`~shared.bus.subscriber.RECEIVE_SECONDS` counts as
#: activity).
INSTANCE_SUBSCRIPTION_IDLE_SECONDS = 300


def fans_out(settings: Settings) -> bool:
    """Whether the bus can create a subscription per instance (so every instance wakes)."""
    return not settings.uses_servicebus or settings.servicebus_manage_entities


def subscription_specs(
    instance_id: str, priorities: Sequence[Priority], *, per_instance: bool
) -> list[SubscriptionSpec]:
    """The subscriptions through which ``instance_id`` hears about its priorities' work.

    Per instance: one, with a rule per priority and one for the gate. Shared: the
    deployment's ``processors-<priority>``, one per priority (see the module docstring).
    """
    if not per_instance:
        return [
            SubscriptionSpec(
                name=f"processors-{p}", rules=({PRIORITY_PROPERTY: p}, dict(GATE_PROPERTIES))
            )
            for p in priorities
        ]
    # Entity names are at most 50 characters; a digest keeps any instance id short.
    digest = hashlib.sha256(instance_id.encode()).hexdigest()[:16]
    rules = tuple({PRIORITY_PROPERTY: p} for p in priorities)
    return [
        SubscriptionSpec(
            name=f"proc-{digest}",
            rules=(*rules, dict(GATE_PROPERTIES)),
            auto_delete_idle_seconds=INSTANCE_SUBSCRIPTION_IDLE_SECONDS,
        )
    ]
