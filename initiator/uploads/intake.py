"""``POST /batches`` with ``{"upload": blob}``: an uploaded blob through the batch intake.

1. With an ``Idempotency-Key`` that already took this upload: that batch again (200).
2. The upload is taken (:mod:`.ledger`): one never granted is 404, one taken already 409.
3. Its blob must have been committed (else 409, and the upload is given back).
4. The blob is read block by block (:class:`~.blob_body.BlobBody`) by
   :meth:`BatchAcceptance.accept`, exactly as a request body: same validation, limits,
   line-numbered rejection, chunking, idempotency and duplicate-body check.
5. Accepted or rejected, the blob is deleted and the upload settled. Stopped for any other
   reason (storage away, the client gone, a key conflict), the upload is given back: the
   blob stays for a retry, and the sweep removes it if none comes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from azure.core.exceptions import ResourceNotFoundError

from initiator.acceptance import BatchAcceptance, BatchRequest, Outcome
from initiator.body import BodyTooLargeError
from initiator.idempotency import IdempotencyKeys, hash_key
from initiator.intake import BatchRejected
from initiator.uploads.blob_body import BlobBody
from initiator.uploads.ledger import (
    UploadLedger,
    UploadState,
    UploadUsedError,
)
from shared.contracts.batch_records import BatchRecords
from shared.settings import Settings
from shared.storage.ports import BlobContainer

log = logging.getLogger(__name__)

#: What says the file itself is refused: the upload is used up, its blob deleted.
FILE_REJECTED = (BatchRejected, BodyTooLargeError)


class UploadMissingError(Exception):
    """The upload was granted but no blob has been committed to it yet (409)."""

    def __init__(self, blob: str) -> None:
        super().__init__(
            f"nothing was uploaded to {blob!r} yet: commit the blob (its block list) first"
        )


@dataclass(frozen=True)
class UploadIntake:
    container: BlobContainer
    ledger: UploadLedger
    acceptance: BatchAcceptance
    keys: IdempotencyKeys
    records: BatchRecords
    settings: Settings

    def accept(self, blob: str, body: BlobBody, request: BatchRequest) -> Outcome:
        """Steps 1-5 (runs in a worker thread, like the body intake)."""
        replayed = self._replay(blob, request.idempotency_key)
        if replayed is not None:
            return replayed
        stale = timedelta(seconds=self.settings.orphan_age_seconds)
        entry = self.ledger.take(blob, stale_after=stale)
        try:
            size = self.container.head(blob).size
        except ResourceNotFoundError:
            self.ledger.give_back(entry)
            raise UploadMissingError(blob) from None
        try:
            if size > self.settings.max_body_bytes:
                raise BodyTooLargeError(self.settings.max_body_bytes)  # before reading a byte
            outcome = self.acceptance.accept(body, request)
        except FILE_REJECTED:
            self.ledger.settle(entry, None)
            self.container.delete(blob)
            log.info("uploaded file %s rejected; its blob is deleted", blob)
            raise
        except BaseException:
            self.ledger.give_back(entry)
            raise
        self.ledger.settle(entry, outcome.record.batch_id)
        self.container.delete(blob)
        return outcome

    def _replay(self, blob: str, idempotency_key: str | None) -> Outcome | None:
        """The batch that this key made from this upload, if it did (a client retrying)."""
        if idempotency_key is None:
            return None
        entry = self.ledger.find(blob)
        if entry is None or entry.state is not UploadState.ACCEPTED:
            return None
        key = self.keys.find(hash_key(idempotency_key))
        if key is None or key.batch_id != entry.batch_id:
            raise UploadUsedError(entry)
        stored = self.records.find(key.batch_id)
        if stored is None:
            raise UploadUsedError(entry)
        return Outcome(stored.record, replayed=True)
