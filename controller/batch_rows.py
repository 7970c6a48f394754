"""The warehouse's ``batches`` row: created from the batch record on a batch's first chunk.

Intake writes the batch record (table storage) but never touches the warehouse; the first
controller thread that meets a chunk of the batch copies what the warehouse needs — the
control totals above all — into a ``batches`` row, which the charges, invoices and applied
marks then refer to. Several threads and processes may meet the batch's first chunks at
once: ``INSERT … ON CONFLICT DO NOTHING`` lets exactly one row in without an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, Table, exists, select, update
from sqlalchemy.dialects import postgresql, sqlite

from shared.contracts.batch_records import BatchRecord
from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.transactions import ControlTotals
from shared.recent import Recent
from shared.warehouse.models import Batch

#: Batches a controller remembers to have a row (a few KB each way; open batches at once
#: are far fewer).
REMEMBERED_BATCHES = 4096


class BatchNotReadyError(RuntimeError):
    """The batch record lacks what the warehouse row needs (it was never accepted)."""


@dataclass(frozen=True)
class BatchRow:
    """The parts of a ``batches`` row that completion reads."""

    batch_id: str
    status: str
    chunks: int
    control: ControlTotals
    completed_at: datetime | None
    warehouse: ControlTotals | None
    reconciled: bool | None
    has_failed_chunks: bool = False

    @property
    def closed(self) -> bool:
        return self.status in FINAL_STATUSES


class BatchRows:
    """Creates and reads ``batches`` rows; remembers which exist to skip needless writes."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        # Batches whose row exists, the recent ones only: a controller meets a batch while
        # its chunks arrive, and a forgotten one costs one indexed look-up.
        self._known: Recent[str, None] = Recent(REMEMBERED_BATCHES)

    @property
    def remembered(self) -> int:
        """How many batches this object remembers to have a row (at most a few thousand)."""
        return len(self._known)

    def exists(self, batch_id: str) -> bool:
        if batch_id in self._known:
            return True
        with self._engine.connect() as connection:
            found = bool(connection.scalar(select(exists().where(Batch.batch_id == batch_id))))
        if found:
            self._remember(batch_id)
        return found

    def ensure(self, record: BatchRecord) -> None:
        """Insert the row for ``record`` unless it exists (race-safe, idempotent)."""
        if self.exists(record.batch_id):
            return
        if record.control_totals is None or record.accepted_at is None:
            raise BatchNotReadyError(
                f"batch {record.batch_id} is {record.status.value}: it has no control totals "
                "or acceptance time yet"
            )
        totals = record.control_totals
        values = {
            "batch_id": record.batch_id,
            "priority": record.priority,
            "transactions": record.transactions,
            "chunks": record.chunks,
            "pricebook_version": record.pricebook_version,
            "status": "processing",  # a chunk of it has reached the controller
            "accepted_at": record.accepted_at,
            "control_transactions": totals.transactions,
            "control_quantity": totals.quantity,
            "control_id_checksum": totals.id_checksum,
            "callback": record.callback,  # where its outcome is delivered (controller.events)
        }
        with self._engine.begin() as connection:
            connection.execute(_insert_if_absent(connection.dialect.name).values(values))
        self._remember(record.batch_id)

    def get(self, batch_id: str) -> BatchRow | None:
        query = select(
            Batch.status,
            Batch.chunks,
            Batch.control_transactions,
            Batch.control_quantity,
            Batch.control_id_checksum,
            Batch.completed_at,
            Batch.warehouse_transactions,
            Batch.warehouse_quantity,
            Batch.warehouse_id_checksum,
            Batch.reconciled,
            Batch.has_failed_chunks,
        ).where(Batch.batch_id == batch_id)
        with self._engine.connect() as connection:
            row = connection.execute(query).one_or_none()
        if row is None:
            return None
        warehouse = None
        if row.warehouse_transactions is not None:
            warehouse = ControlTotals(
                transactions=row.warehouse_transactions,
                quantity=row.warehouse_quantity,
                id_checksum=row.warehouse_id_checksum,
            )
        return BatchRow(
            batch_id=batch_id,
            status=row.status,
            chunks=row.chunks,
            control=ControlTotals(
                transactions=row.control_transactions,
                quantity=row.control_quantity,
                id_checksum=row.control_id_checksum,
            ),
            completed_at=row.completed_at,
            warehouse=warehouse,
            reconciled=row.reconciled,
            has_failed_chunks=row.has_failed_chunks,
        )

    def note_failure(self, batch_id: str) -> None:
        """Flag the row as having a failed chunk, so that its tallies look the failures up.

        Written before the recording controller tallies: whichever controller tallies last
        then sees the flag (see :meth:`controller.completion.BatchCompletion.tally`).
        """
        statement = (
            update(Batch)
            .where(Batch.batch_id == batch_id, ~Batch.has_failed_chunks)
            .values(has_failed_chunks=True)
        )
        with self._engine.begin() as connection:
            connection.execute(statement)

    def _remember(self, batch_id: str) -> None:
        self._known.put(batch_id, None)


def _insert_if_absent(dialect: str) -> postgresql.Insert | sqlite.Insert:
    table = Batch.__table__
    assert isinstance(table, Table)
    if dialect == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=[table.c.batch_id])
    if dialect == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=[table.c.batch_id])
    raise NotImplementedError(f"the warehouse supports SQLite and PostgreSQL, not {dialect}")
