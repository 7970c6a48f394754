"""Fault injection, a test tool: storage and bus requests that fail as ``BILLING_FAULTS`` says.

Off unless ``BILLING_FAULTS`` is set (see :mod:`shared.faults.spec` for its keys); every
injector logs a warning when it is opened, so a process under faults says so loudly.
:func:`shared.storage.open_storage` and :func:`shared.bus.open_bus` apply it, so every role
process of a deployment started with the variable runs under the plan:

* Azure storage: at the bottom of each SDK client's pipeline (:mod:`.transport`), below
  the SDK's own retries;
* embedded storage: at the ports, acting out the SDK's retries (:mod:`.storage`,
  :mod:`.retrying`), so both backends behave the same;
* the trigger bus, either backend: at the port (:mod:`.bus`).

Which operations are safe to retry blindly and which need a read-back is
:mod:`shared.storage.retries`.
"""

from __future__ import annotations

from shared.bus.ports import TriggerBus
from shared.faults.plan import FaultPlan, announce
from shared.faults.spec import FaultSpec, Target
from shared.settings import Settings
from shared.storage.ports import StorageAccount

__all__ = ["FaultSpec", "with_bus_faults", "with_embedded_storage_faults"]


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
