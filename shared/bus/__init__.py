"""The trigger bus: the port and the choice of backend from the settings."""

from __future__ import annotations

from shared.bus.ports import TriggerBus
from shared.settings import Settings


def open_bus(settings: Settings) -> TriggerBus:
    """Service Bus when a connection string or namespace is set, else the embedded bus."""
    if settings.uses_servicebus:
        from shared.bus.servicebus import ServiceBusTriggerBus

        return ServiceBusTriggerBus.from_settings(settings)
    from shared.bus.embedded import EmbeddedTriggerBus

    return EmbeddedTriggerBus(settings.data_dir / "bus", settings.trigger_topic)
