"""Telling the batch that a chunk failed, when its work item is set aside as poison.

The listener engine moves a work item that keeps failing to ``<queue>-poison`` and calls
its ``on_poison`` hook before deleting the item. The processor's hook sends a
:class:`~shared.contracts.messages.ChunkFailed` to the output queue, the same queue that carries the
chunk results, so the controller (and the status page, through it) counts the chunk as
failed instead of waiting for it forever.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from shared.contracts.messages import ChunkFailed, WorkItem
from shared.listener.source import poison_queue
from shared.storage.ports import Queue, QueueMessage

log = logging.getLogger(__name__)


class ChunkFailureReporter:
    """An ``on_poison`` hook: one :class:`ChunkFailed` per poisoned work item."""

    def __init__(self, output: Queue) -> None:
        self._output = output

    def __call__(self, message: QueueMessage, queue_name: str, last_error: str) -> None:
        """Raises if the output queue refuses the message: the engine then keeps the work
        item and poisons it again on its next dequeue, so the failure is never unreported."""
        try:
            item = WorkItem.from_text(message.content)
        except ValidationError:
            # Not a work item at all: no batch to tell. The poison record keeps the text.
            log.error(
                "poisoned message %s of %s is not a work item; no batch can be told",
                message.id,
                queue_name,
            )
            return
        failed = ChunkFailed(
            batch_id=item.batch_id,
            chunk=item.chunk,
            poison_queue=poison_queue(queue_name),
            error=last_error,
        )
        self._output.send(failed.to_text())
        log.error("chunk %s/%d failed for good: %s", item.batch_id, item.chunk, last_error)
