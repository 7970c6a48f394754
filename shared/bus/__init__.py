"""The trigger bus: the port and the choice of backend from the settings."""

from __future__ import annotations

from shared.bus.ports import TriggerBus
from shared.settings import Settings


def open_bus(settings: Settings, topic: str | None = None) -> TriggerBus:
    """Service Bus when a connection string or namespace is set, else the embedded bus;
    under ``BILLING_FAULTS``, wrapped in its fault plan (:mod:`shared.faults.bus`).
    ``topic``: default the trigger topic; the batch events have their own
    (``settings.events_topic``)."""
    topic = topic or settings.trigger_topic
    bus: TriggerBus
    if settings.uses_servicebus:
        from shared.bus.servicebus import ServiceBusTriggerBus

        bus = ServiceBusTriggerBus.from_settings(settings, topic)
    else:
        from shared.bus.embedded import EmbeddedTriggerBus

        bus = EmbeddedTriggerBus(settings.data_dir / "bus", topic)
    if settings.faults is None:
        return bus
    from shared.faults.apply import with_bus_faults

    return with_bus_faults(bus, settings)
