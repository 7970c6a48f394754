"""A queue the listener reads, with its priority, partition and poison queue.

The processor reads ``3 priorities * K partitions`` work queues (seeds 003 and 004); the
controller reads one output queue. Both hand the engine a list of :class:`QueueSource`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shared.settings import PRIORITIES, Priority, Settings, poison_queue
from shared.storage.ports import Queue, StorageAccount


@dataclass(frozen=True)
class QueueSource:
    """One queue to listen to. ``poison`` receives its messages that keep failing."""

    queue: Queue
    poison: Queue
    priority: Priority = "normal"
    partition: int = 0

    @property
    def name(self) -> str:
        return self.queue.name

    @property
    def rank(self) -> int:
        """0 for high, 1 for normal, 2 for low: lower ranks are served first."""
        return PRIORITIES.index(self.priority)

    @classmethod
    def from_account(
        cls,
        account: StorageAccount,
        name: str,
        *,
        priority: Priority = "normal",
        partition: int = 0,
    ) -> QueueSource:
        """The queue ``name`` of ``account`` and its ``<name>-poison`` queue."""
        return cls(account.queue(name), account.queue(poison_queue(name)), priority, partition)


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
