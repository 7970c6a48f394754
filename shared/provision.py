"""Create what each role needs — queues, containers, tables, the topic — idempotently.

Every role calls this at start, so a fresh Azurite, a fresh embedded folder or a fresh
Azure account all work without a separate set-up step. In Azure, Bicep declares the same
names (``infra/``); creating an existing resource is a no-op.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal

from azure.core.exceptions import AzureError

from shared.bus.ports import TriggerBus
from shared.settings import PRIORITIES, Settings, poison_queue
from shared.storage.ports import StorageAccount

Role = Literal["initiator", "processor", "controller"]

log = logging.getLogger(__name__)

#: Creating a resource is idempotent, so a failed create is simply tried again: the table
#: SDK never retries its POST after a timeout or a lost response, nor after a 429.
CREATE_ATTEMPTS = 4


def queues_for(settings: Settings) -> list[str]:
    """Every queue the pipeline uses: work queues, their poison queues, and the output."""
    work = [name for p in PRIORITIES for name in settings.work_queues(p)]
    return [*work, *(poison_queue(q) for q in work), settings.output_queue]


def containers_for(settings: Settings) -> list[str]:
    return [settings.payload_container, settings.results_container, settings.control_container]


def tables_for(settings: Settings) -> list[str]:
    return [settings.batches_table, settings.chunks_table, settings.heartbeats_table]


def ensure_resources(settings: Settings, storage: StorageAccount, bus: TriggerBus | None) -> None:
    """Create all queues, containers and tables (and the topic, when the bus can).

    A storage failure that outlasts a few attempts stops the role from starting. The topic
    does not: a trigger only saves waiting, so a role whose topic is unreachable starts
    anyway and its processors find the work on their safety poll.
    """
    pause = settings.storage_retry_backoff_seconds
    for name in queues_for(settings):
        _create(storage.queue(name).create, pause)
    for name in containers_for(settings):
        _create(storage.container(name).create, pause)
    for name in tables_for(settings):
        _create(storage.table(name).create, pause)
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


def _create(create: Callable[[], None], pause: float) -> None:
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            create()
            return
        except AzureError:
            if attempt == CREATE_ATTEMPTS:
                raise
            log.warning("creating a resource failed (attempt %d); trying again", attempt)
            time.sleep(pause * attempt)
