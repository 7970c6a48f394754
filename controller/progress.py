"""The live status: the controller copies each tally and each outcome into the batch record.

``GET /batches/{id}`` answers from the batch record alone (one table read, no SQL per
poll). The figures themselves come from the warehouse: as chunks settle the controller
writes the tally it just took — in :data:`PROGRESS_STEPS` steps of the batch, not after
every chunk, since each write costs a read and a write of table storage — and when a batch
closes it copies the closed row's figures (status, completion time, warehouse totals,
``reconciled``) and the failed chunks' numbers.

Every write is ETag-conditional and **monotonic**: several controller threads tally the
same batch at once, and a slower one must not replace a newer count with an older one. On
a 412 the record is read again and the write skipped if it is already as far along.
Progress is advisory (the next chunk writes a newer count) so giving up on it only logs;
the outcome is not, so :meth:`BatchRecordUpdates.outcome` raises, which leaves the result
message to reappear and the copy to be retried.

A progress write does not read the record first when this controller wrote it last (or
read it when the batch's trigger came, :meth:`BatchRecordUpdates.remember`): it writes
against the ETag it holds, and only a 412 (someone wrote since) costs the read. Counts only
grow, so a held record that already shows a count is a record whose stored copy shows at
least as much: skipping the write then is right too. That saves a table read per progress
write, five or so per batch. The outcome, written once per batch, always reads first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from azure.core.exceptions import ResourceModifiedError

from controller.completion import Settlement
from shared.contracts.batch_records import (
    MAX_NAMED_FAILED_CHUNKS,
    BatchRecord,
    BatchRecords,
    StoredBatch,
)
from shared.contracts.batch_status import FINAL_STATUSES, BatchStatus
from shared.recent import Recent

log = logging.getLogger(__name__)

#: Conditional writes lost to other controller threads before giving up.
MAX_ATTEMPTS = 20
#: An open batch's progress is written about this many times in all (a batch of at most
#: this many chunks, after every chunk): 20 % steps for a status page, and about a dozen
#: storage requests of progress per batch however many chunks it has. Chunks grow with the
#: batch, so even a large batch has only tens of them.
PROGRESS_STEPS = 5
#: Batch records a controller holds (with their ETags) for its next progress write.
REMEMBERED_RECORDS = 256

Changes = Callable[[BatchRecord], dict[str, Any]]
"""What a write should change in a record as it stands (nothing: the record is as wanted)."""


def progress_due(settled: int, total: int) -> bool:
    """Whether a tally of ``settled`` of ``total`` chunks should be written to the record.

    The first chunk always is (the record turns ``processing``), then every
    ``total / PROGRESS_STEPS`` chunks. Under concurrency a handler may see a count skip
    a step; the next step, or the outcome at close, catches up.
    """
    step = max(1, total // PROGRESS_STEPS)
    return settled <= 1 or settled % step == 0


class OutcomeNotRecordedError(RuntimeError):
    """The batch record could not be brought up to date with the closed warehouse row."""


class BatchRecordUpdates:
    """Brings batch records (table storage) up to date with the warehouse."""

    def __init__(self, records: BatchRecords, max_attempts: int = MAX_ATTEMPTS) -> None:
        self._records = records
        self._max_attempts = max_attempts
        # The record as this controller last read or wrote it, per open batch.
        self._held: Recent[str, StoredBatch] = Recent(REMEMBERED_RECORDS)

    def remember(self, stored: StoredBatch) -> None:
        """``stored`` was just read: the next progress write may go against its ETag."""
        self._held.put(stored.record.batch_id, stored)

    def _forget(self, batch_id: str) -> None:
        self._held.pop(batch_id)

    def _holding(self, batch_id: str) -> StoredBatch | None:
        return self._held.get(batch_id)

    def apply(self, settlement: Settlement) -> None:
        """Progress of an open batch, or the outcome of a closed one."""
        if settlement.row.closed:
            self.outcome(settlement)
        else:
            self.progress(settlement)

    def progress(self, settlement: Settlement) -> None:
        tally = settlement.tally

        def changes(record: BatchRecord) -> dict[str, Any]:
            if record.status in FINAL_STATUSES:
                return {}  # the outcome is written; counts no longer move
            wanted = {
                "chunks_applied": max(record.chunks_applied, tally.applied),
                "chunks_failed": max(record.chunks_failed, len(tally.failed)),
                "status": BatchStatus.PROCESSING
                if record.status is BatchStatus.ACCEPTED
                else record.status,
            }
            return _different(record, wanted)

        if not self._write(settlement.batch_id, changes, read_first=False):
            log.warning(
                "progress of batch %s not recorded after %d attempts (the next chunk will)",
                settlement.batch_id,
                self._max_attempts,
            )

    def outcome(self, settlement: Settlement) -> None:
        row, tally = settlement.row, settlement.tally
        status = BatchStatus.FAILED if row.status == BatchStatus.FAILED else BatchStatus.COMPLETED

        def changes(record: BatchRecord) -> dict[str, Any]:
            return _different(
                record,
                {
                    "status": status,
                    "completed_at": row.completed_at,
                    "warehouse_totals": row.warehouse,
                    "reconciled": row.reconciled,
                    "chunks_applied": tally.applied,
                    "chunks_failed": len(tally.failed),
                    "failed_chunks": tally.failed[:MAX_NAMED_FAILED_CHUNKS],
                },
            )

        if not self._write(settlement.batch_id, changes, read_first=True):
            raise OutcomeNotRecordedError(
                f"batch {settlement.batch_id} is {row.status} in the warehouse but its record "
                f"could not be updated in {self._max_attempts} attempts"
            )
        self._forget(settlement.batch_id)  # closed: no progress to write any more

    def _write(self, batch_id: str, changes: Changes, *, read_first: bool) -> bool:
        """Compute ``changes(record)`` and write them conditionally; on a 412, read the
        record again and retry. The first attempt goes against the record this controller
        holds unless ``read_first`` (or it holds none).

        True once the record holds the changes (or has none to take, or is gone).
        """
        stored = None if read_first else self._holding(batch_id)
        for _ in range(self._max_attempts):
            if stored is None:
                stored = self._records.find(batch_id)
                if stored is None:
                    log.warning("batch %s has no record any more; status not updated", batch_id)
                    self._forget(batch_id)
                    return True
                self.remember(stored)
            update = changes(stored.record)
            if not update:
                return True
            try:
                saved = self._records.save(stored, stored.record.model_copy(update=update))
            except ResourceModifiedError:
                stored = None  # another thread wrote first: look again
                continue
            self.remember(saved)
            return True
        return False


def _different(record: BatchRecord, wanted: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in wanted.items() if getattr(record, name) != value}
