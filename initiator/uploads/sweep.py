"""Removing what uploads leave behind: blobs no batch took, and grants long expired.

A sender may ask for a grant and never upload, upload and never ``POST /batches``, or stop
halfway (staged blocks, no blob). Every round of the initiator's sweeper (at start, then
every ``orphan_sweep_seconds``) removes an ``incoming`` blob older than
``upload_orphan_age_seconds``, and a grant whose expiry is that old (with its blob and
staged blocks, if any). The age is far above a grant's life, so nothing still being
written is touched; a blob an intake is reading (its upload taken, recently) is left alone.
Several initiators sweeping at once is safe: each delete is conditional on the blob's ETag.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from initiator.uploads.ledger import UploadLedger, UploadState
from shared.contracts.batch_records import utc_now
from shared.settings import Settings
from shared.storage.ports import StorageAccount

log = logging.getLogger(__name__)


def sweep_uploads(
    storage: StorageAccount, settings: Settings, older_than: timedelta | None = None
) -> list[str]:
    """Remove stale uploads; returns the names of the blobs and grants removed."""
    age = (
        older_than
        if older_than is not None
        else timedelta(seconds=settings.upload_orphan_age_seconds)
    )
    cutoff = utc_now() - age
    container = storage.container(settings.upload_container)
    ledger = UploadLedger(storage.table(settings.batches_table))
    entries = ledger.all()
    reading_since = utc_now() - timedelta(seconds=settings.orphan_age_seconds)
    being_read = {
        entry.blob
        for entry in entries
        if entry.state is UploadState.TAKEN and entry.taken_at and entry.taken_at > reading_since
    }
    removed: list[str] = []
    for blob in container.list():
        stale = blob.last_modified is not None and blob.last_modified <= cutoff
        if stale and blob.name not in being_read:
            container.delete(blob.name, if_match=blob.etag)
            removed.append(blob.name)
    for entry in entries:
        if entry.expires_at <= cutoff and entry.blob not in being_read:
            container.delete(entry.blob)  # and its staged blocks, if it never got further
            ledger.forget(entry)
            if entry.blob not in removed:
                removed.append(entry.blob)
    if removed:
        log.warning("swept %d stale upload(s): %s", len(removed), ", ".join(removed))
    return removed
