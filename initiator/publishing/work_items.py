"""Step 4 of publishing: one work item per chunk, spread over the priority's partitions.

Partitioned queues (docs/patterns.md): a priority's work queue is K queues; senders pick
any, readers read all, so no single queue's message rate limits the throughput. Chunk ``i``
of a batch goes to partition ``(start + i) mod K`` with a random ``start`` per batch, so
every partition gets ``n / K`` items (±1) and small batches do not all pile onto
partition 0.

Each Azure queue send is one HTTP request, so items are sent by a small thread pool.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from initiator.publishing.payloads import StoredChunk
from shared.contracts.messages import WorkItem
from shared.domain.priority import Priority
from shared.storage.ports import Queue
from shared.tracing import trace_context

DEFAULT_SEND_THREADS = 8
Q = TypeVar("Q")


def work_items(
    batch_id: str, priority: Priority, pricebook_version: str, chunks: Sequence[StoredChunk]
) -> list[WorkItem]:
    trace = trace_context()  # the intake span's: each chunk's rating is its child
    return [
        WorkItem(
            batch_id=batch_id,
            chunk=chunk.index,
            priority=priority,
            payload_blob=chunk.blob,
            first_line=chunk.first_line,
            last_line=chunk.last_line,
            transactions=chunk.transactions,
            sha256=chunk.sha256,
            pricebook_version=pricebook_version,
            trace=trace,
        )
        for chunk in chunks
    ]


def round_robin(items: Sequence[object], queues: Sequence[Q], start: int) -> list[Q]:
    """The queue of each item: consecutive partitions from ``start``."""
    return [queues[(start + i) % len(queues)] for i in range(len(items))]


def send_work_items(
    items: Sequence[WorkItem],
    queues: Sequence[Queue],
    *,
    after_each: Callable[[], None] = lambda: None,
    threads: int = DEFAULT_SEND_THREADS,
    start: int | None = None,
) -> list[str]:
    """Send every item; returns the names of the queues that received at least one.

    Raises the first send failure (the batch is then abandoned, see the publisher).
    """
    if start is None:
        start = random.randrange(len(queues))
    targets = round_robin(items, queues, start)

    def send(pair: tuple[WorkItem, Queue]) -> None:
        item, queue = pair
        queue.send(item.to_text())
        after_each()

    with ThreadPoolExecutor(min(threads, max(len(items), 1))) as pool:
        for _ in pool.map(send, zip(items, targets, strict=True)):
            pass
    used = {queue.name for queue in targets}
    return [queue.name for queue in queues if queue.name in used]
