"""Putting the settings' fault plan on an opened storage account or bus (see the package)."""

from __future__ import annotations

from shared.bus.ports import TriggerBus
from shared.faults.plan import FaultPlan, announce
from shared.faults.spec import Target
from shared.settings import Settings
from shared.storage.ports import StorageAccount


def with_embedded_storage_faults(account: StorageAccount, settings: Settings) -> StorageAccount:
    """``account`` (an embedded one) under the settings' fault plan, or as it is."""
    spec = settings.faults
    if spec is None or not any(spec.applies_to(target) for target in ("blob", "queue", "table")):
        return account
    from shared.faults.retrying import RetryingInjector
    from shared.faults.storage import FaultyStorageAccount

    def injector(target: Target) -> RetryingInjector | None:
        if not spec.applies_to(target):
            return None
        announce(spec, f"embedded {target} storage")
        return RetryingInjector(
            FaultPlan(spec, target),
            retry_total=settings.storage_retry_total,
            backoff_seconds=settings.storage_retry_backoff_seconds,
        )

    return FaultyStorageAccount(
        account, blob=injector("blob"), queue=injector("queue"), table=injector("table")
    )


def with_bus_faults(bus: TriggerBus, settings: Settings) -> TriggerBus:
    """``bus`` under the settings' fault plan, or as it is."""
    spec = settings.faults
    if spec is None or not spec.applies_to("bus"):
        return bus
    from shared.faults.bus import FaultyTriggerBus

    announce(spec, f"the trigger bus ({bus.topic})")
    return FaultyTriggerBus(bus, FaultPlan(spec, "bus"))
