"""After a failed intake, what storage holds decides the answer, not what the error suggests.

A storage write can be applied while its response is lost (a reset connection, a timeout):
the SDK then raises although the write took effect, and it does not retry a table PATCH or
POST blindly, since repeating a non-idempotent write is not safe. So an exception during
the commit says nothing certain about the record. Answering "not accepted" from the
exception alone once told clients to retry batches that were in fact accepted and processed:
billed twice.

Which writes need this, and which do not:

* Payload blobs (PUT of a whole blob), queue deletes, idempotency-key deletes and record
  deletes are idempotent: repeating them is harmless, and the SDKs retry them.
* Work items (queue POST) may be duplicated by a lost response; that is harmless because
  the controller applies each chunk exactly once.
* The record's status updates (table PATCH with If-Match) are *not* safe to repeat blindly:
  a repeat after an applied write fails with 412 and looks like a lost race. They are
  settled here by reading the record back and trying again from what it says, until one
  conditional write wins or the record shows the batch accepted or gone.
"""

from __future__ import annotations

import logging
import time

from initiator.idempotency import IdempotencyKeys
from initiator.publishing.cleanup import mark_abandoned, remove_abandoned
from shared.contracts.batch_records import BatchRecord, BatchRecords, StoredBatch
from shared.contracts.batch_status import UNFINISHED_INTAKE, AbandonReason, BatchStatus
from shared.storage.ports import BlobContainer, Queue

#: How many read-back rounds before the outcome is declared unknown, and the first pause
#: between them (doubling). Enough to ride out the SDK's own retries failing once more.
SETTLE_ATTEMPTS = 6
SETTLE_FIRST_PAUSE_SECONDS = 0.2

#: The states of a batch that has not (yet) been accepted.
_BEFORE_ACCEPTED = UNFINISHED_INTAKE | {BatchStatus.ABANDONED}

log = logging.getLogger(__name__)


class IntakeOutcomeUnknownError(Exception):
    """Storage could not say whether the batch was accepted (503: ask again later)."""

    def __init__(self, batch_id: str) -> None:
        super().__init__(
            f"storage failed while batch {batch_id} was being accepted, and could not be read "
            f"back to tell whether it was: GET /batches/{batch_id} tells once storage is back "
            "(a 404 then means it never was); a retry with the same Idempotency-Key is safe"
        )
        self.batch_id = batch_id


def settle(
    batch_id: str,
    last_known: StoredBatch,
    reason: AbandonReason,
    *,
    records: BatchRecords,
    payloads: BlobContainer,
    keys: IdempotencyKeys,
    results: Queue,
) -> BatchRecord | None:
    """Make a failed intake end one way or the other, and say which, from storage.

    ``reason``: what the batch is abandoned for, if it is (:mod:`.cleanup`).

    Returns the record when the batch turned out accepted (the failure came after the
    commit point, or the response to the commit write was lost): the caller answers 202.
    Returns None when the batch is abandoned or gone: no processor will rate it. Raises
    :class:`IntakeOutcomeUnknownError` when storage cannot tell.
    """
    stored: StoredBatch | None = last_known
    pause = SETTLE_FIRST_PAUSE_SECONDS
    for attempt in range(SETTLE_ATTEMPTS):
        if attempt:
            time.sleep(pause)
            pause *= 2
        try:
            if stored is None:
                stored = records.find(batch_id)
                if stored is None:
                    return None  # removed by the sweeper: never accepted
            if stored.record.status not in _BEFORE_ACCEPTED:
                return stored.record
            abandoned = mark_abandoned(stored, records, reason)
        except Exception:
            log.warning(
                "batch %s: storage failed while settling its intake", batch_id, exc_info=True
            )
            stored = None  # whatever the write did, the next round reads it back
            continue
        if abandoned is None:
            stored = None  # moved on since it was read: read where to
            continue
        _remove(abandoned, records=records, payloads=payloads, keys=keys, results=results)
        return None
    raise IntakeOutcomeUnknownError(batch_id)


def _remove(
    stored: StoredBatch,
    *,
    records: BatchRecords,
    payloads: BlobContainer,
    keys: IdempotencyKeys,
    results: Queue,
) -> None:
    """Best effort: the batch is already ``abandoned``; whatever is left (its message to
    the controller included), the sweeper finishes."""
    try:
        remove_abandoned(stored, records=records, payloads=payloads, keys=keys, results=results)
    except Exception:
        log.exception("could not clean up batch %s; the sweeper will", stored.record.batch_id)
