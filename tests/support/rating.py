"""Rate work items as a processor does, in the test's own thread: the processor's rating step
on the deployment's storage, with no controller to apply the results."""

from __future__ import annotations

from processor.worker import rating_step
from shared.domain.priority import PRIORITIES
from shared.settings import Settings
from shared.storage.ports import StorageAccount


def rate_work_items(storage: StorageAccount, settings: Settings, count: int) -> int:
    """Take up to ``count`` work items off the work queues, rate each, delete it; how many."""
    step = rating_step(settings, storage, "test-processor")
    rated = 0
    for priority in PRIORITIES:
        for partition in range(settings.partitions):
            queue = storage.queue(settings.work_queue(priority, partition))
            while rated < count and (taken := queue.receive(max_messages=1)):
                step.handle(taken[0].content, taken[0].dequeue_count)
                queue.delete(taken[0])
                rated += 1
    return rated
