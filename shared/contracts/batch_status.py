"""The statuses of a batch, declared once: the batch record and the warehouse use them.

A batch moves through explicit states (rq-style registries, one place to read them):

``receiving``
    The initiator is streaming the body and writing payload blobs. Written before the first
    blob, so that whatever a crash leaves behind can be found from the table alone.
``accepting``
    The batch is valid, its control totals are recorded, work items are being enqueued.
``accepted``
    Every work item is on its queue: from here the batch is never lost.
``processing``, ``completed``, ``failed``
    Set by the controller: a chunk was applied, every chunk is in (or failed).
``abandoned``
    The initiator gave up on it (a failure while accepting) or the sweeper found it stuck
    in ``receiving``/``accepting``; its blobs and record are being removed. Why is its
    :class:`AbandonReason`, which also decides whether a ``billing.batch.abandoned`` event
    is published.

Every transition is an ETag-conditional update, so the initiator's ``accepting → accepted``
and the sweeper's ``accepting → abandoned`` cannot both win.
"""

from __future__ import annotations

from enum import StrEnum


class BatchStatus(StrEnum):
    RECEIVING = "receiving"
    ACCEPTING = "accepting"
    ACCEPTED = "accepted"
    PROCESSING = "processing"
    COMPLETED = "completed"
    FAILED = "failed"
    ABANDONED = "abandoned"


#: Statuses in which the initiator is still working on the batch (or crashed while it was).
UNFINISHED_INTAKE = frozenset({BatchStatus.RECEIVING, BatchStatus.ACCEPTING})
#: The statuses a batch can have in the warehouse, which sees it from ``accepted`` on.
WAREHOUSE_STATUSES = (
    BatchStatus.ACCEPTED,
    BatchStatus.PROCESSING,
    BatchStatus.COMPLETED,
    BatchStatus.FAILED,
)
#: A batch still taking chunks, and a closed one.
OPEN_STATUSES = (BatchStatus.ACCEPTED, BatchStatus.PROCESSING)
FINAL_STATUSES = (BatchStatus.COMPLETED, BatchStatus.FAILED)


class AbandonReason(StrEnum):
    """Why a batch was abandoned, written with ``abandoned`` in the deciding write."""

    #: Rejected (a bad file, a duplicate, a lost idempotency race), the client hung up
    #: during the upload, or read again under another id: the sender never held this
    #: batch id as a batch it had sent, so no event (a rejected batch leaves no trace).
    DISCARDED = "discarded"
    #: Storage failed while the valid batch was being accepted; the sender was answered
    #: ``503`` "not accepted" (or lost the answer).
    INTAKE_FAILED = "intake_failed"
    #: The intake went silent (its initiator died or lost storage) and was swept.
    INTAKE_STOPPED = "intake_stopped"

    @property
    def published(self) -> bool:
        """Whether this abandonment is announced as a ``billing.batch.abandoned`` event."""
        return self is not AbandonReason.DISCARDED
