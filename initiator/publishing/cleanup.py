"""Removing a batch that will never be accepted: a rejected one, a failed one, an orphan.

The record is first moved to ``abandoned`` with an ETag condition. That single write decides
the race with an initiator that might still be finishing the batch: if the initiator moved
the record on (to ``accepted``), the condition fails and nothing is touched; if we won, the
initiator's own next conditional write fails and it stops. Only then are the payload blobs,
the idempotency mapping and finally the record deleted, in that order, so that a crash
half-way leaves an ``abandoned`` record for the sweeper to finish.
"""

from __future__ import annotations

import contextlib
import logging

from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

from initiator.idempotency import IdempotencyKeys
from initiator.publishing.payloads import delete_payloads
from shared.batch_records import BatchRecords, BatchStatus, StoredBatch
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
    record = stored.record
    if record.status is not BatchStatus.ABANDONED:
        if record.status not in (BatchStatus.RECEIVING, BatchStatus.ACCEPTING):
            return False
        try:
            stored = records.save(
                stored, record.model_copy(update={"status": BatchStatus.ABANDONED})
            )
        except (ResourceModifiedError, ResourceNotFoundError):
            log.info("batch %s moved on while being abandoned; left alone", record.batch_id)
            return False
    blobs = delete_payloads(payloads, record.batch_id)
    if record.idempotency_key_hash:
        keys.release(record.idempotency_key_hash, record.batch_id)
    # Absent or changed: another sweeper finished first.
    with contextlib.suppress(ResourceNotFoundError, ResourceModifiedError):
        records.delete(stored)
    log.info("abandoned batch %s (%d payload blobs removed)", record.batch_id, blobs)
    return True
