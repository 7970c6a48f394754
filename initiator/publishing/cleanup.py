"""Removing a batch that will never be accepted: a rejected one, a failed one, an orphan.

The record is first moved to ``abandoned`` with an ETag condition
(:func:`mark_abandoned`). That single write decides the race with an initiator that might
still be finishing the batch: if the initiator moved the record on (to ``accepted``), the
condition fails and nothing is touched; if we won, the initiator's own next conditional
write fails and it stops. The same write records why (an
:class:`~shared.contracts.batch_status.AbandonReason`) and when.

Then :func:`remove_abandoned` first tells the controller, with a ``BatchAbandoned`` message
on its output queue, unless the reason is one that publishes nothing (a rejected batch
leaves no trace); the controller records the ``billing.batch.abandoned`` event once,
however many copies arrive. Only then are the payload blobs, the idempotency mapping and
finally the record deleted, in that order, so that a crash anywhere after the deciding write
leaves an ``abandoned`` record for the sweeper to finish, message included.
"""

from __future__ import annotations

import contextlib
import logging

from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

from initiator.idempotency import IdempotencyKeys
from initiator.publishing.payloads import delete_payloads
from shared.contracts.batch_records import BatchRecord, BatchRecords, StoredBatch, utc_now
from shared.contracts.batch_status import UNFINISHED_INTAKE, AbandonReason, BatchStatus
from shared.contracts.messages import BatchAbandoned
from shared.storage.ports import BlobContainer, Queue

log = logging.getLogger(__name__)


def abandon(
    stored: StoredBatch,
    reason: AbandonReason,
    *,
    records: BatchRecords,
    payloads: BlobContainer,
    keys: IdempotencyKeys,
    results: Queue,
) -> bool:
    """Remove every trace of an unaccepted batch. False if it turned out to be accepted."""
    abandoned = mark_abandoned(stored, records, reason)
    if abandoned is None:
        return False
    remove_abandoned(abandoned, records=records, payloads=payloads, keys=keys, results=results)
    return True


def mark_abandoned(
    stored: StoredBatch, records: BatchRecords, reason: AbandonReason
) -> StoredBatch | None:
    """The deciding write: ``receiving``/``accepting`` → ``abandoned`` if ``stored`` is current.

    A record already ``abandoned`` is returned as it is, with the reason it was given.
    None when the record is past intake or changed since it was read (or is gone): someone
    moved it on, and the caller must read it again to learn where to.
    """
    record = stored.record
    if record.status is BatchStatus.ABANDONED:
        return stored
    if record.status not in UNFINISHED_INTAKE:
        return None
    # ``updated_at`` stays: the sweeper finishes a half-removed batch as soon as it would
    # have removed the orphan.
    abandoned = record.model_copy(
        update={
            "status": BatchStatus.ABANDONED,
            "abandon_reason": reason,
            "abandoned_at": utc_now(),
        }
    )
    try:
        return records.save(stored, abandoned)
    except (ResourceModifiedError, ResourceNotFoundError):
        log.info("batch %s moved on while being abandoned; left alone", record.batch_id)
        return None


def remove_abandoned(
    stored: StoredBatch,
    *,
    records: BatchRecords,
    payloads: BlobContainer,
    keys: IdempotencyKeys,
    results: Queue,
) -> None:
    """Tell the controller (:func:`report_abandoned`), then delete an ``abandoned`` batch's
    blobs, key and body mappings and record, in that order."""
    record = stored.record
    assert record.status is BatchStatus.ABANDONED, record.status
    report_abandoned(record, results)
    blobs = delete_payloads(payloads, record.batch_id)
    if record.idempotency_key_hash:
        keys.release(record.idempotency_key_hash, record.batch_id)
    if record.body_sha256:
        keys.release_body(record.body_sha256, record.batch_id)
    # Absent or changed: another sweeper finished first.
    with contextlib.suppress(ResourceNotFoundError, ResourceModifiedError):
        records.delete(stored)
    log.info("abandoned batch %s (%d payload blobs removed)", record.batch_id, blobs)


def report_abandoned(record: BatchRecord, results: Queue) -> bool:
    """Send the controller a ``BatchAbandoned`` for ``record``, if its reason is published.

    A record abandoned without a reason (written by an older initiator) counts as a
    stopped intake. True if a message was sent."""
    reason = record.abandon_reason or AbandonReason.INTAKE_STOPPED
    if not reason.published:
        return False
    message = BatchAbandoned(
        batch_id=record.batch_id,
        priority=record.priority,
        reason=reason,
        abandoned_at=record.abandoned_at or utc_now(),
        transactions=record.transactions,
        chunks=record.chunks,
        control_totals=record.control_totals,
        callback=record.callback,
    )
    results.send(message.to_text())
    return True
