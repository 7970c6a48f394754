"""Poison messages: a message that keeps failing is set aside instead of retried forever.

When a message is received with ``dequeue_count > max_dequeue_count`` the engine does not
hand it to the handler again. :class:`PoisonMover` writes a :class:`PoisonRecord` (content,
last error, source queue) to ``<queue>-poison``, calls ``on_poison`` (the processor marks
the chunk failed so the batch status shows it), and only then deletes the message from the
work queue — so a crash in between leaves it to be poisoned again, never lost.

The last error is what this process saw. Earlier attempts may have run in another process
(or crashed without an error); then the record says so instead of guessing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from azure.core.exceptions import ResourceNotFoundError
from pydantic import BaseModel, ConfigDict

from shared.listener.source import QueueSource
from shared.recent import Recent
from shared.storage.ports import MessageTooLargeError, QueueMessage

log = logging.getLogger(__name__)

UNKNOWN_LAST_ERROR = "unknown (last attempt in another process)"
#: error texts are cut to this length: the record must fit in one 64 KiB queue message
MAX_ERROR_CHARS = 2000
#: if content + error still do not fit, the content is cut to this many characters
TRUNCATED_CONTENT_CHARS = 16 * 1024

#: ``on_poison(message, queue_name, last_error)``
OnPoison = Callable[[QueueMessage, str, str], None]


class PoisonRecord(BaseModel):
    """What ``<queue>-poison`` holds for each message set aside (JSON)."""

    model_config = ConfigDict(frozen=True)

    source_queue: str
    message_id: str
    dequeue_count: int
    content: str
    content_truncated: bool = False
    last_error: str
    inserted_on: datetime | None = None
    poisoned_at: datetime


def describe_error(error: BaseException) -> str:
    """``"ValueError: bad sku"``, cut to :data:`MAX_ERROR_CHARS`."""
    return f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]


class ErrorMemory:
    """The last handler error per message id seen by this process (bounded, oldest out)."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._errors: Recent[str, str] = Recent(capacity)

    def remember(self, message_id: str, error: str) -> None:
        self._errors.put(message_id, error)

    def recall(self, message_id: str) -> str | None:
        return self._errors.get(message_id)

    def forget(self, message_id: str) -> None:
        self._errors.pop(message_id)


class PoisonMover:
    """Moves messages that exceeded ``max_dequeue_count`` to their poison queue."""

    def __init__(
        self,
        max_dequeue_count: int,
        errors: ErrorMemory,
        on_poison: OnPoison | None = None,
    ) -> None:
        self.max_dequeue_count = max_dequeue_count
        self._errors = errors
        self._on_poison = on_poison

    def is_poison(self, message: QueueMessage) -> bool:
        return message.dequeue_count > self.max_dequeue_count

    def move(self, message: QueueMessage, source: QueueSource) -> PoisonRecord:
        """Record, notify, then delete. ``message`` must carry the current pop receipt.

        Raises if the record cannot be written or ``on_poison`` fails: the message then
        stays in the work queue and is poisoned again on its next dequeue.
        """
        last_error = self._errors.recall(message.id) or UNKNOWN_LAST_ERROR
        record = PoisonRecord(
            source_queue=source.name,
            message_id=message.id,
            dequeue_count=message.dequeue_count,
            content=message.content,
            last_error=last_error,
            inserted_on=message.inserted_on,
            poisoned_at=datetime.now(UTC),
        )
        self._send(record, source)
        if self._on_poison is not None:
            self._on_poison(message, source.name, last_error)
        try:
            source.queue.delete(message)
        except ResourceNotFoundError:
            log.warning("poisoned message %s was already gone from %s", message.id, source.name)
        self._errors.forget(message.id)
        log.error(
            "message %s of %s poisoned after %d dequeues (last error: %s)",
            message.id,
            source.name,
            message.dequeue_count,
            last_error,
        )
        return record

    def _send(self, record: PoisonRecord, source: QueueSource) -> None:
        try:
            self._send_fitting(record, source)
        except ResourceNotFoundError:
            source.poison.create()  # poison queues are made on first use
            self._send_fitting(record, source)

    @staticmethod
    def _send_fitting(record: PoisonRecord, source: QueueSource) -> None:
        try:
            source.poison.send(record.model_dump_json())
        except MessageTooLargeError:
            log.error(
                "poison record of %s too large; full content follows: %s",
                record.message_id,
                record.content,
            )
            cut = record.model_copy(
                update={
                    "content": record.content[:TRUNCATED_CONTENT_CHARS],
                    "content_truncated": True,
                }
            )
            source.poison.send(cut.model_dump_json())
