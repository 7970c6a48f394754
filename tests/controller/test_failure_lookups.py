"""A batch's tallies look its failed chunks up in the chunks table only once it has one.

Every chunk a controller applies is followed by a tally of its batch. Failures live in the
chunks table (storage), so a tally that looked them up on every chunk cost one storage
request per chunk for nothing in almost every batch; the row's ``has_failed_chunks`` flag
makes it one per batch. Counted at the storage meter, on both stacks.
"""

from __future__ import annotations

from sqlalchemy import Engine

from controller.worker import build_result_handler, order_id_allocator
from shared import meter
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.checks import batch_row


def _record(settings: Settings, storage: StorageAccount, batch_id: str) -> BatchRecord:
    stored = BatchRecords(storage.table(settings.batches_table)).find(batch_id)
    assert stored is not None
    return stored.record


def _table_reads_to_apply(
    settings: Settings, storage: StorageAccount, warehouse: Engine, batch_id: str, chunks: int
) -> int:
    """Apply a batch of ``chunks`` chunks, one result at a time; the table reads it took."""
    batch = publish_batch(
        storage, settings, batch_id, make_transactions(chunks * 3, seed=chunks), chunk_size=3
    )
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    before = meter.snapshot()
    for message in batch.results:
        handler.handle_text(message.to_text())
    reads = meter.diff(meter.snapshot(), before).get("table.read", 0)
    assert _record(settings, storage, batch_id).status is BatchStatus.COMPLETED
    return reads


def test_the_table_reads_of_a_batch_without_failures_do_not_grow_with_its_chunks(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    # 10 and 30 chunks write the same number of progress updates (one per fifth of the
    # batch); each update reads the record once. A failure lookup per tally would add 20.
    ten = _table_reads_to_apply(settings, storage, warehouse, "b-ten", 10)
    thirty = _table_reads_to_apply(settings, storage, warehouse, "b-thirty", 30)

    assert thirty == ten
    assert ten < 10
    assert batch_row(warehouse, "b-thirty")["has_failed_chunks"] is False


def _close_with_a_failure(
    settings: Settings, storage: StorageAccount, warehouse: Engine, batch_id: str, *, first: bool
) -> BatchRecord:
    """Chunk 1 of 4 fails, its notice handled ``first`` or after the three others applied;
    the batch record after the last one."""
    batch = publish_batch(storage, settings, batch_id, make_transactions(12, seed=5), chunk_size=3)
    failed = batch.chunk_failed(1).to_text()
    applied = [m.to_text() for m in batch.results if m.chunk != 1]
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    for text in [failed, *applied] if first else [*applied, failed]:
        handler.handle_text(text)
    return _record(settings, storage, batch_id)


def test_a_failure_recorded_after_every_other_chunk_closes_the_batch_failed(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    record = _close_with_a_failure(settings, storage, warehouse, "b-fails-last", first=False)

    assert (record.status, record.failed_chunks) == (BatchStatus.FAILED, (1,))
    row = batch_row(warehouse, "b-fails-last")
    assert (row["status"], row["has_failed_chunks"]) == ("failed", True)


def test_a_failure_recorded_before_the_other_chunks_closes_the_batch_on_the_last_one(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    record = _close_with_a_failure(settings, storage, warehouse, "b-fails-first", first=True)

    assert (record.status, record.failed_chunks) == (BatchStatus.FAILED, (1,))
    assert (record.chunks_applied, record.chunks_failed) == (3, 1)
