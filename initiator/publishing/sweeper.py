"""The sweeper: removes what a crashed intake left behind.

A batch whose record has stayed in ``receiving`` or ``accepting`` (or ``abandoned``) without
a sign of life for ``older_than`` was being accepted by an initiator that died: its payload
blobs, idempotency mapping and record are removed (see :func:`~.cleanup.abandon`), and any
work items it had already sent are dropped by processors, which find no accepted batch.
Live uploads refresh their record every minute, far more often than the default age.

The initiator sweeps once at start; ``billing`` operators may run it at any time.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from initiator.idempotency import IdempotencyKeys
from initiator.publishing.cleanup import abandon
from shared.batch_records import BatchRecords, BatchStatus, utc_now
from shared.settings import Settings
from shared.storage.ports import StorageAccount

DEFAULT_ORPHAN_AGE = timedelta(minutes=15)

log = logging.getLogger(__name__)


def sweep_orphans(
    storage: StorageAccount, settings: Settings, older_than: timedelta = DEFAULT_ORPHAN_AGE
) -> list[str]:
    """Remove batches stuck before ``accepted`` for longer than ``older_than``.

    Returns the ids of the batches removed.
    """
    table = storage.table(settings.batches_table)
    records = BatchRecords(table)
    keys = IdempotencyKeys(table)
    payloads = storage.container(settings.payload_container)
    cutoff = utc_now() - older_than
    stale = [
        stored
        for stored in records.in_status(
            BatchStatus.RECEIVING, BatchStatus.ACCEPTING, BatchStatus.ABANDONED
        )
        if stored.record.last_seen() <= cutoff
    ]
    removed = [
        stored.record.batch_id
        for stored in stale
        if abandon(stored, records=records, payloads=payloads, keys=keys)
    ]
    if removed:
        log.warning("swept %d orphaned batch(es): %s", len(removed), ", ".join(removed))
    return removed
