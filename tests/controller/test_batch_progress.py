"""The live status in the batch record: the controller's fields and monotonic progress."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.batch_rows import BatchRow
from controller.completion import ChunkTally, Settlement
from controller.progress import BatchRecordUpdates
from shared import meter
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.domain.transactions import ControlTotals
from shared.settings import Settings
from shared.storage.ports import StorageAccount

CONTROL = ControlTotals(transactions=40, quantity=900, id_checksum=2**64 - 5)


def accepted(batch_id: str) -> BatchRecord:
    now = datetime.now(UTC)
    return BatchRecord(
        batch_id=batch_id,
        status=BatchStatus.ACCEPTED,
        priority="high",
        pricebook_version="v1",
        received_at=now,
        accepted_at=now,
        transactions=40,
        chunks=4,
        control_totals=CONTROL,
    )


def settlement(batch_id: str, applied: int, failed: tuple[int, ...] = ()) -> Settlement:
    row = BatchRow(batch_id, "processing", 4, CONTROL, None, None, None)
    return Settlement(batch_id, ChunkTally(4, applied, failed), row)


@pytest.fixture
def records(settings: Settings, storage: StorageAccount) -> BatchRecords:
    return BatchRecords(storage.table(settings.batches_table))


def record_of(records: BatchRecords, batch_id: str) -> BatchRecord:
    """The batch's record as the table holds it now."""
    stored = records.find(batch_id)
    assert stored is not None
    return stored.record


def test_the_controllers_fields_round_trip_through_the_table(
    records: BatchRecords,
) -> None:
    closed = accepted("b-round").model_copy(
        update={
            "status": BatchStatus.FAILED,
            "completed_at": datetime(2025, 6, 1, 12, 0, 1, tzinfo=UTC),
            "warehouse_totals": ControlTotals(transactions=30, quantity=700, id_checksum=2**63),
            "reconciled": False,
            "failed_chunks": (1, 3),
            "chunks_applied": 2,
            "chunks_failed": 2,
        }
    )

    records.create(closed)

    assert record_of(records, "b-round") == closed


def test_a_record_written_before_the_controller_reads_with_empty_outcome(
    records: BatchRecords,
) -> None:
    records.create(accepted("b-fresh"))

    record = record_of(records, "b-fresh")
    assert (record.completed_at, record.warehouse_totals, record.reconciled) == (None, None, None)
    assert record.failed_chunks == ()


def test_progress_moves_forward_only_and_marks_the_batch_processing(
    records: BatchRecords,
) -> None:
    records.create(accepted("b-progress"))
    updates = BatchRecordUpdates(records)

    updates.progress(settlement("b-progress", applied=3, failed=(2,)))
    updates.progress(settlement("b-progress", applied=1))  # a slower thread's older tally

    record = record_of(records, "b-progress")
    assert record.status is BatchStatus.PROCESSING
    assert (record.chunks_applied, record.chunks_failed) == (3, 1)


def test_the_outcome_is_copied_from_the_closed_row_and_progress_no_longer_moves_it(
    records: BatchRecords,
) -> None:
    records.create(accepted("b-outcome"))
    updates = BatchRecordUpdates(records)
    completed_at = datetime(2025, 6, 1, 12, 0, 2, tzinfo=UTC)
    row = BatchRow("b-outcome", "completed", 4, CONTROL, completed_at, CONTROL, True)

    updates.apply(Settlement("b-outcome", ChunkTally(4, 4, ()), row, closed_now=True))
    updates.progress(settlement("b-outcome", applied=2))

    record = record_of(records, "b-outcome")
    assert record.status is BatchStatus.COMPLETED
    assert (record.completed_at, record.warehouse_totals, record.reconciled) == (
        completed_at,
        CONTROL,
        True,
    )
    assert (record.chunks_applied, record.chunks_failed, record.failed_chunks) == (4, 0, ())


def table_requests(before: dict[str, int]) -> tuple[int, int]:
    counted = meter.diff(meter.snapshot(), before)
    return counted.get("table.read", 0), counted.get("table.write", 0)


def test_progress_writes_go_against_the_record_the_controller_holds_without_reading_it(
    records: BatchRecords,
) -> None:
    records.create(accepted("b-held"))
    updates = BatchRecordUpdates(records)
    stored = records.find("b-held")  # as the controller reads it when the trigger comes
    assert stored is not None
    updates.remember(stored)

    before = meter.snapshot()
    for applied in (1, 2, 3):
        updates.progress(settlement("b-held", applied=applied))

    assert table_requests(before) == (0, 3)
    record = record_of(records, "b-held")
    assert (record.status, record.chunks_applied) == (BatchStatus.PROCESSING, 3)


def test_a_record_written_by_another_controller_meanwhile_is_read_again_not_overwritten(
    records: BatchRecords,
) -> None:
    records.create(accepted("b-two"))
    mine, theirs = BatchRecordUpdates(records), BatchRecordUpdates(records)
    mine.progress(settlement("b-two", applied=1))  # read once, then held
    theirs.progress(settlement("b-two", applied=3))  # my held ETag is stale now

    before = meter.snapshot()
    mine.progress(settlement("b-two", applied=2))  # 412, read: 3 is further along
    assert table_requests(before) == (1, 1)  # the refused write, the read; nothing after
    before = meter.snapshot()
    mine.progress(settlement("b-two", applied=4))  # against the record just read
    assert table_requests(before) == (0, 1)

    assert record_of(records, "b-two").chunks_applied == 4
