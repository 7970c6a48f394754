"""The sweeper: removes what a crashed or cut-off intake left behind.

A batch whose record has stayed in ``receiving`` or ``accepting`` (or ``abandoned``) without
a sign of life for ``orphan_age_seconds`` was being accepted by an initiator that died, or
that lost storage before it could clean up: its payload blobs, idempotency mapping and
record are removed (see :func:`~.cleanup.abandon`; the controller is told first, so that a
``billing.batch.abandoned`` event is published), and any work items it had already sent
are dropped by processors, which find no accepted batch. A record already ``abandoned``
keeps the reason it was given; the others are abandoned as stopped intakes. Live uploads
refresh their record every minute, far more often than the default age.

Every initiator sweeps at start and then every ``orphan_sweep_seconds`` while it runs
(:class:`OrphanSweeper`); several replicas sweeping at once is safe, since each removal
starts with an ETag-conditional write. A client retrying with the key of an orphan does not
wait for the next sweep: the intake removes a stale orphan it finds on its key at once.
Each round also removes stale uploads (:mod:`initiator.uploads.sweep`).
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from initiator.idempotency import IdempotencyKeys
from initiator.publishing.cleanup import abandon
from initiator.uploads.sweep import sweep_uploads
from shared.contracts.batch_records import BatchRecords, StoredBatch, utc_now
from shared.contracts.batch_status import UNFINISHED_INTAKE, AbandonReason, BatchStatus
from shared.settings import Settings
from shared.storage.ports import StorageAccount

log = logging.getLogger(__name__)


def is_orphan(stored: StoredBatch, older_than: timedelta) -> bool:
    """An intake that stopped before ``accepted`` and has been silent for ``older_than``."""
    record = stored.record
    if record.status not in {*UNFINISHED_INTAKE, BatchStatus.ABANDONED}:
        return False
    return record.last_seen() <= utc_now() - older_than


def sweep_orphans(
    storage: StorageAccount, settings: Settings, older_than: timedelta | None = None
) -> list[str]:
    """Remove batches stuck before ``accepted`` for longer than ``older_than``.

    ``older_than`` defaults to the settings' orphan age. Returns the ids of the batches removed.
    """
    age = timedelta(seconds=settings.orphan_age_seconds) if older_than is None else older_than
    table = storage.table(settings.batches_table)
    records = BatchRecords(table)
    keys = IdempotencyKeys(table)
    payloads = storage.container(settings.payload_container)
    results = storage.queue(settings.output_queue)
    stale = [
        stored
        for stored in records.in_status(
            BatchStatus.RECEIVING, BatchStatus.ACCEPTING, BatchStatus.ABANDONED
        )
        if is_orphan(stored, age)
    ]
    removed = [
        stored.record.batch_id
        for stored in stale
        if abandon(
            stored,
            AbandonReason.INTAKE_STOPPED,
            records=records,
            payloads=payloads,
            keys=keys,
            results=results,
        )
    ]
    if removed:
        log.warning("swept %d orphaned batch(es): %s", len(removed), ", ".join(removed))
    return removed


class OrphanSweeper:
    """:func:`sweep_orphans` every ``orphan_sweep_seconds`` on a thread, until :meth:`close`."""

    def __init__(self, storage: StorageAccount, settings: Settings) -> None:
        self._storage = storage
        self._settings = settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="orphan-sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._settings.orphan_sweep_seconds):
            try:
                sweep_orphans(self._storage, self._settings)
                sweep_uploads(self._storage, self._settings)
            except Exception:  # storage away: the next round tries again
                log.warning(
                    "orphan sweep failed; next try in %.0f s",
                    self._settings.orphan_sweep_seconds,
                    exc_info=True,
                )
