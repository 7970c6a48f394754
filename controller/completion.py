"""Batch completion: when every chunk is settled, exactly one controller closes the batch.

A chunk is *settled* when it is applied (its mark is in the warehouse) or failed (its
entity in the chunks table, see :mod:`controller.failed_chunks`) — applied wins if both.
After every chunk it handles, a controller thread tallies the batch **from the stores**
(never from an in-memory counter, which another process would not share): the handler that
settles the last chunk necessarily sees all the others, since each one's write is durable
before its own tally starts. A failure's writes are two, the chunks table entity and the
row's ``has_failed_chunks`` flag, both before its tally; a tally looks failures up only
when the flag is set, so a batch that has none costs no chunks-table query per chunk.

Closing is one database transaction that starts with one conditional statement::

    UPDATE batches SET status = 'completed', completed_at = …
    WHERE batch_id = ? AND status IN ('accepted', 'processing')

and only if it moved the row (``rowcount == 1``) goes on, in the same transaction: it
writes the batch's invoices from its charges, reconciles (:mod:`controller.reconciliation`),
sets the row's warehouse figures and ``reconciled``, and writes the outcome's event to the
outbox (:mod:`controller.events.outbox`). The invoices, the outcome and its event therefore
commit together or not at all: one close writes them, once.

A batch closed ``failed`` reopens only one way: when its poisoned chunks are redriven
(``billing poison redrive``) and applied, the tally finds every chunk applied and the row
moves ``failed`` → ``completed`` by the same kind of conditional update.

Two controllers that tally the last chunk at the same moment both try; the database lets
exactly one update match: on PostgreSQL the second waits on the row the first updated and,
once that commits, finds it no longer open; on SQLite writers take turns (``BEGIN
IMMEDIATE``). Only the winner writes invoices and logs the outcome. A crash anywhere in the
close, between the invoices and the outcome included, rolls all of it back: the next tally
closes the batch again, from the start.

Next step (docs/walkthrough.md): ``controller.reconciliation``, the checks the close runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, func, select, update

from controller.batch_rows import BatchRow, BatchRows
from controller.events.outbox import record_outcome
from controller.failed_chunks import FailedChunks
from controller.reconciliation import Reconciliation, reconcile, write_invoices
from shared.contracts.batch_event import Outcome
from shared.contracts.batch_status import OPEN_STATUSES, BatchStatus
from shared.warehouse.models import AppliedChunk, Batch

#: The statuses a close may move a row from, by the status the tally saw. A row seen
#: ``failed`` is only re-closed (as completed, once its poisoned chunks were redriven and
#: applied) if it is still ``failed``: the one conditional update is still the arbiter.
_CLOSABLE: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(OPEN_STATUSES, OPEN_STATUSES),
    "failed": ("failed",),
}

log = logging.getLogger(__name__)


def _record_event(
    connection: Connection, tally: ChunkTally, reconciliation: Reconciliation, closed_at: datetime
) -> None:
    """The outbox row of the close (controller.events.outbox), in its transaction."""
    record_outcome(
        connection,
        batch_id=reconciliation.batch_id,
        outcome=Outcome.FAILED if tally.failed else Outcome.COMPLETED,
        closed_at=closed_at,
        chunks_applied=tally.applied,
        failed_chunks=tally.failed,
        warehouse_totals=reconciliation.warehouse,
        reconciled=reconciliation.reconciled and not tally.failed,
        invoice_mismatches=len(reconciliation.invoice_differences),
    )


def _recovered(row: BatchRow, tally: ChunkTally) -> bool:
    """A batch closed as failed whose every chunk is applied now (a redrive)."""
    return row.status == "failed" and not tally.failed


@dataclass(frozen=True)
class ChunkTally:
    """How many of a batch's chunks are applied, and which failed (and are not applied)."""

    total: int
    applied: int
    failed: tuple[int, ...]

    @property
    def settled(self) -> int:
        return self.applied + len(self.failed)

    @property
    def complete(self) -> bool:
        return self.settled >= self.total


@dataclass(frozen=True)
class Settlement:
    """A batch after a tally: still open, or closed (by this call or an earlier one)."""

    batch_id: str
    tally: ChunkTally
    row: BatchRow
    closed_now: bool = False
    reconciliation: Reconciliation | None = None


class BatchCompletion:
    """Tallies batches and closes the settled ones (safe across threads and processes)."""

    def __init__(self, engine: Engine, rows: BatchRows, failures: FailedChunks) -> None:
        self._engine = engine
        self._rows = rows
        self._failures = failures

    def tally(self, batch_id: str, total: int, *, has_failed_chunks: bool) -> ChunkTally:
        """Count from the warehouse (applied marks) and the chunks table (failures).

        The chunks table is queried only if the batch's row says it has had a failure:
        the recording controller sets that flag before it tallies, so the tally that may
        settle a batch by its failures always sees it, and a batch without failures costs
        no storage request per chunk.
        """
        with self._engine.connect() as connection:
            applied = connection.scalar(
                select(func.count())
                .select_from(AppliedChunk)
                .where(AppliedChunk.batch_id == batch_id)
            )
            applied = int(applied or 0)
            if applied >= total or not has_failed_chunks:
                return ChunkTally(total, applied, ())
            failed = [failure.chunk for failure in self._failures.of_batch(batch_id)]
            if not failed:
                return ChunkTally(total, applied, ())
            # Applied wins: a chunk whose work item was poisoned after its result had been
            # sent may be both. Counted once, as applied.
            also_applied = set(
                connection.scalars(
                    select(AppliedChunk.chunk).where(
                        AppliedChunk.batch_id == batch_id, AppliedChunk.chunk.in_(failed)
                    )
                )
            )
        return ChunkTally(total, applied, tuple(c for c in failed if c not in also_applied))

    def settle(self, batch_id: str) -> Settlement | None:
        """Tally the batch and close it if every chunk is settled; None if it has no row."""
        row = self._rows.get(batch_id)
        if row is None:
            return None
        tally = self.tally(batch_id, row.chunks, has_failed_chunks=row.has_failed_chunks)
        if not tally.complete or (row.closed and not _recovered(row, tally)):
            return Settlement(batch_id, tally, row)
        reconciliation = self._close(row, tally)
        if reconciliation is None:
            closed = self._rows.get(batch_id)  # another controller won: report its outcome
            return Settlement(batch_id, tally, closed or row)
        self._log_outcome(tally, reconciliation)
        closed = self._rows.get(batch_id)
        assert closed is not None  # rows are never deleted
        return Settlement(batch_id, tally, closed, closed_now=True, reconciliation=reconciliation)

    def _close(self, row: BatchRow, tally: ChunkTally) -> Reconciliation | None:
        """The close's transaction; its reconciliation if this call moved the row (exactly
        one does), else None."""
        closed_at = datetime.now(UTC)
        claim = (
            update(Batch)
            .where(Batch.batch_id == row.batch_id, Batch.status.in_(_CLOSABLE[row.status]))
            .values(
                status=BatchStatus.FAILED if tally.failed else BatchStatus.COMPLETED,
                completed_at=closed_at,
            )
        )
        with self._engine.begin() as connection:
            if connection.execute(claim).rowcount != 1:
                return None  # closed by another controller (or earlier): nothing written
            write_invoices(connection, row.batch_id)
            reconciliation = reconcile(connection, row.batch_id, row.control)
            totals = reconciliation.warehouse
            connection.execute(
                update(Batch)
                .where(Batch.batch_id == row.batch_id)
                .values(
                    warehouse_transactions=totals.transactions,
                    warehouse_quantity=totals.quantity,
                    warehouse_id_checksum=totals.id_checksum,
                    # A failed batch lacks its failed chunks' transactions: never reconciled.
                    reconciled=reconciliation.reconciled and not tally.failed,
                )
            )
            # the outcome's event, committed with the close or not at all
            _record_event(connection, tally, reconciliation, closed_at)
            return reconciliation

    @staticmethod
    def _log_outcome(tally: ChunkTally, reconciliation: Reconciliation) -> None:
        batch_id = reconciliation.batch_id
        if tally.failed:
            log.error(
                "batch %s failed: chunks %s are in a poison queue (%d of %d applied)",
                batch_id,
                list(tally.failed),
                tally.applied,
                tally.total,
            )
        else:
            log.info("batch %s completed: all %d chunks applied", batch_id, tally.total)
        if reconciliation.reconciled:
            log.info("%s", reconciliation.describe())
        else:
            log.error("%s", reconciliation.describe())
