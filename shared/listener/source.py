"""A queue the listener reads, with its priority, partition and poison queue.

The processor reads one queue per priority and partition; the controller reads one output
queue. Both hand the engine a list of :class:`QueueSource`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.domain.priority import PRIORITIES, Priority
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


def poison_queue(queue: str) -> str:
    """Where a message of ``queue`` goes after too many dequeues."""
    return f"{queue}-poison"
