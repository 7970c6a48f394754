"""Create what each role needs — queues, containers, tables, the topic, the control
blobs every processor reads while idle — idempotently.

Every role calls this at start, so a fresh Azurite, a fresh embedded folder or a fresh
Azure account all work without a separate set-up step. In Azure, Bicep declares the same
names (``infra/``); creating an existing resource is a no-op.
"""

from __future__ import annotations

import logging

from shared.bus.ports import TriggerBus
from shared.coordination.gate import GATE_BLOB, ensure_gate
from shared.coordination.work_signal import WORK_SIGNAL_BLOB, ensure_work_signal
from shared.listener.source import poison_queue
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.storage.transient import retry_transient

log = logging.getLogger(__name__)

#: The control blobs provisioning writes (create-only): what idle processors read.
CONTROL_BLOBS = (GATE_BLOB, WORK_SIGNAL_BLOB)


def queues_for(settings: Settings) -> list[str]:
    """Every queue the pipeline uses: work queues, their poison queues, and the output."""
    work = settings.all_work_queues()
    return [*work, *(poison_queue(q) for q in work), settings.output_queue]


def containers_for(settings: Settings) -> list[str]:
    return [
        settings.payload_container,
        settings.results_container,
        settings.control_container,
        settings.upload_container,
    ]


def tables_for(settings: Settings) -> list[str]:
    return [settings.batches_table, settings.chunks_table, settings.heartbeats_table]


def ensure_resources(settings: Settings, storage: StorageAccount, bus: TriggerBus | None) -> None:
    """Create all queues, containers and tables (and the topic, when the bus can).

    Nothing when ``settings.provision_resources`` is off: the deployment declared them.

    A create is idempotent, so one that fails transiently is tried again (the table SDK never
    retries its POST after a timeout or a lost response, nor after a 429); a storage failure
    that outlasts those attempts stops the role from starting. The topic
    does not: a trigger only saves waiting, so a role whose topic is unreachable starts
    anyway and its processors find the work on their safety poll.
    """
    if not settings.provision_resources:
        log.info("resources are declared by the deployment: not creating any")
        return
    pause = settings.storage_retry_backoff_seconds
    for name in queues_for(settings):
        retry_transient(storage.queue(name).create, what=f"creating queue {name}", pause=pause)
    for name in containers_for(settings):
        retry_transient(
            storage.container(name).create, what=f"creating container {name}", pause=pause
        )
    for name in tables_for(settings):
        retry_transient(storage.table(name).create, what=f"creating table {name}", pause=pause)
    # Written once, create-only (so safe to retry), so that idle processors' reads of them
    # never answer 404.
    control = storage.container(settings.control_container)
    retry_transient(lambda: ensure_gate(control), what="writing the gate", pause=pause)
    retry_transient(
        lambda: ensure_work_signal(control), what="writing the work signal", pause=pause
    )
    if bus is not None:
        try:
            bus.ensure_topic()
        except Exception:
            log.warning(
                "trigger topic %s not reachable; going on without it (the safety poll finds "
                "the work)",
                bus.topic,
                exc_info=True,
            )
    log.info(
        "resources ready on %s: %d queues, %d containers, %d tables",
        storage.account_name,
        len(queues_for(settings)),
        len(containers_for(settings)),
        len(tables_for(settings)),
    )
