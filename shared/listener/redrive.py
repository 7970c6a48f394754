"""Operating poison queues: see what was set aside and why, and send it back to be retried.

A message lands in ``<queue>-poison`` (:mod:`shared.listener.poison`) after too many
dequeues: a corrupt or missing payload, a bug, a dependency down for too long. Once the
cause is fixed, :func:`redrive` puts each selected record's original content back on its
source queue as a new message (dequeue count 0), then deletes the record. A crash between
the two leaves the message in both queues: it is processed twice, which the controller's
exactly-once apply makes harmless, and is never lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from shared.listener.poison import PoisonRecord
from shared.storage.ports import MAX_MESSAGES_PER_RECEIVE, Queue, QueueMessage

#: How long a record taken for redrive stays invisible to a concurrent redrive.
REDRIVE_VISIBILITY_SECONDS = 60

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Poisoned:
    """A record in a poison queue (``record`` is None if the message is not a record)."""

    queue: str
    message_id: str
    record: PoisonRecord | None


def _record_of(message: QueueMessage) -> PoisonRecord | None:
    try:
        return PoisonRecord.model_validate_json(message.content)
    except ValidationError:
        return None


def peek_poisoned(poison: Queue, limit: int = MAX_MESSAGES_PER_RECEIVE) -> list[Poisoned]:
    """Up to ``limit`` (at most 32, the service's peek limit) records, without taking them."""
    return [
        Poisoned(poison.name, message.id, _record_of(message))
        for message in poison.peek(min(limit, MAX_MESSAGES_PER_RECEIVE))
    ]


@dataclass(frozen=True)
class RedriveReport:
    redriven: list[PoisonRecord]
    skipped: list[Poisoned]
    """Not selected, not a record, or with truncated content (cannot be sent back as it was)."""


def redrive(
    poison: Queue,
    source_of: Callable[[str], Queue],
    *,
    select: Callable[[PoisonRecord], bool] = lambda _record: True,
) -> RedriveReport:
    """Send every selected record of ``poison`` back to its source queue, then delete it."""
    redriven: list[PoisonRecord] = []
    skipped: list[Poisoned] = []
    passed_over: list[QueueMessage] = []
    while messages := poison.receive(
        MAX_MESSAGES_PER_RECEIVE, visibility_timeout=REDRIVE_VISIBILITY_SECONDS
    ):
        for message in messages:
            record = _record_of(message)
            if record is None or record.content_truncated or not select(record):
                skipped.append(Poisoned(poison.name, message.id, record))
                passed_over.append(message)
                continue
            source_of(record.source_queue).send(record.content)
            poison.delete(message)
            redriven.append(record)
            log.info("redrove message %s from %s", record.message_id, poison.name)
    for message in passed_over:  # visible again at once, for the next operator
        poison.update_visibility(message, 0)
    return RedriveReport(redriven, skipped)
