"""The work queues a processor listens to: every partition of every priority it serves."""

from __future__ import annotations

from collections.abc import Iterable

from shared.domain.priority import PRIORITIES, Priority
from shared.listener.source import QueueSource
from shared.settings import Settings
from shared.storage.ports import StorageAccount


def work_sources(
    account: StorageAccount, settings: Settings, priorities: Iterable[Priority] | None = None
) -> list[QueueSource]:
    """Every partition of every served priority's work queue (default: the settings' set)."""
    served = settings.processor_priorities if priorities is None else list(priorities)
    return [
        QueueSource.from_account(
            account,
            settings.work_queue(priority, partition),
            priority=priority,
            partition=partition,
        )
        for priority in PRIORITIES
        if priority in served
        for partition in range(settings.partitions)
    ]
