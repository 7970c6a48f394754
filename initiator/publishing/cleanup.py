"""Removing a batch that will never be accepted: a rejected one, a failed one, an orphan.

The record is first moved to ``abandoned`` with an ETag condition
(:func:`mark_abandoned`). That single write decides the race with an initiator that might
still be finishing the batch: if the initiator moved the record on (to ``accepted``), the
condition fails and nothing is touched; if we won, the initiator's own next conditional
write fails and it stops. Only then are the payload blobs, the idempotency mapping and
finally the record deleted (:func:`remove_abandoned`), in that order, so that a crash
half-way leaves an ``abandoned`` record for the sweeper to finish.
"""

from __future__ import annotations

import contextlib
import logging

from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

from initiator.idempotency import IdempotencyKeys
from initiator.publishing.payloads import delete_payloads
from shared.contracts.batch_records import BatchRecords, StoredBatch
from shared.contracts.batch_status import UNFINISHED_INTAKE, BatchStatus
from shared.storage.ports import BlobContainer

log = logging.getLogger(__name__)


def abandon(
    stored: StoredBatch,
    *,
    records: BatchRecords,
    payloads: BlobContainer,
    keys: IdempotencyKeys,
) -> bool:
    """Remove every trace of an unaccepted batch. False if it turned out to be accepted."""
    abandoned = mark_abandoned(stored, records)
    if abandoned is None:
        return False
    remove_abandoned(abandoned, records=records, payloads=payloads, keys=keys)
    return True


def mark_abandoned(stored: StoredBatch, records: BatchRecords) -> StoredBatch | None:
    """The deciding write: ``receiving``/``accepting`` → ``abandoned`` if ``stored`` is current.

    None when the record is past intake or changed since it was read (or is gone): someone
    moved it on, and the caller must read it again to learn where to.
    """
    record = stored.record
    if record.status is BatchStatus.ABANDONED:
        return stored
    if record.status not in UNFINISHED_INTAKE:
        return None
    try:
        return records.save(stored, record.model_copy(update={"status": BatchStatus.ABANDONED}))
    except (ResourceModifiedError, ResourceNotFoundError):
        log.info("batch %s moved on while being abandoned; left alone", record.batch_id)
        return None


def remove_abandoned(
    stored: StoredBatch,
    *,
    records: BatchRecords,
    payloads: BlobContainer,
    keys: IdempotencyKeys,
) -> None:
    """Delete an ``abandoned`` batch's blobs, key and body mappings and record, in that order."""
    record = stored.record
    assert record.status is BatchStatus.ABANDONED, record.status
    blobs = delete_payloads(payloads, record.batch_id)
    if record.idempotency_key_hash:
        keys.release(record.idempotency_key_hash, record.batch_id)
    if record.body_sha256:
        keys.release_body(record.body_sha256, record.batch_id)
    # Absent or changed: another sweeper finished first.
    with contextlib.suppress(ResourceNotFoundError, ResourceModifiedError):
        records.delete(stored)
    log.info("abandoned batch %s (%d payload blobs removed)", record.batch_id, blobs)
