"""Exactly once under a crash between commit and delete, and a completion race."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from sqlalchemy import Engine, select

from controller.batch_rows import BatchRows
from controller.completion import BatchCompletion, Settlement
from controller.failed_chunks import FailedChunks
from controller.reducer import apply_chunk
from controller.worker import order_id_allocator
from shared.contracts.batch_records import BatchRecords
from shared.contracts.chunk_result import decode_result
from shared.domain.charges import subtotals
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse import make_engine
from shared.warehouse.models import OutboxEvent
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.checks import (
    applied_chunk_count,
    assert_charges_match_the_reference,
    assert_invoices_match_the_reference,
    batch_row,
)
from tests.controller.conftest import WorkerFactory, wait_until_closed
from tests.controller.killed_controller import settings_to_json

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_a_controller_killed_between_commit_and_delete_leaves_one_row_per_transaction(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    transactions = make_transactions(90, seed=21)
    batch = publish_batch(storage, settings, "b-killed", transactions, chunk_size=30)
    output = storage.queue(settings.output_queue)
    for message in batch.results:
        output.send(message.to_text())

    child = subprocess.run(
        [sys.executable, "-m", "tests.controller.killed_controller", settings_to_json(settings)],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )

    assert child.returncode == -9, child.stderr.decode(errors="replace")[-3000:]
    # The chunk is committed but its message was never deleted.
    assert applied_chunk_count(warehouse, batch.batch_id) == 1
    assert output.approximate_count() == len(batch.results)

    worker = start_worker()  # the message reappears after the visibility timeout
    record = wait_until_closed(storage, settings, batch.batch_id)

    assert_charges_match_the_reference(warehouse, batch.batch_id, transactions)
    assert_invoices_match_the_reference(warehouse, batch.batch_id, transactions)
    assert record.reconciled is True
    snapshot = worker.snapshot()
    assert (snapshot.chunks_applied, snapshot.chunks_skipped) == (len(batch.chunks) - 1, 1)


def test_when_several_controllers_settle_the_last_chunk_at_once_exactly_one_closes(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    transactions = make_transactions(60, seed=23)
    batch = publish_batch(storage, settings, "b-race", transactions, chunk_size=20)
    records = BatchRecords(storage.table(settings.batches_table))
    stored = records.find(batch.batch_id)
    assert stored is not None
    BatchRows(warehouse).ensure(stored.record)
    allocator = order_id_allocator(settings, storage)
    results = storage.container(settings.results_container)
    for message in batch.results:  # applied, but nobody has tallied yet
        rated = decode_result(results.get(message.result_blob).data)
        apply_chunk(
            warehouse,
            batch_id=batch.batch_id,
            chunk=message.chunk,
            charges=rated.charges,
            subtotals=subtotals(row.charge for row in rated.charges).values(),
            currency=rated.currency,
            allocator=allocator,
            processor="test",
        )

    contenders = 4
    engines = [make_engine(settings.resolved_warehouse_url) for _ in range(contenders)]
    barrier = threading.Barrier(contenders)
    outcomes: list[Settlement | None] = []
    errors: list[BaseException] = []

    def contend(engine: Engine) -> None:
        completion = BatchCompletion(
            engine, BatchRows(engine), FailedChunks(storage.table(settings.chunks_table))
        )
        try:
            barrier.wait(timeout=30)
            outcomes.append(completion.settle(batch.batch_id))
        except BaseException as error:  # asserted below
            errors.append(error)

    threads = [threading.Thread(target=contend, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for engine in engines:
        engine.dispose()

    assert errors == []
    assert len(outcomes) == contenders
    assert sum(1 for outcome in outcomes if outcome and outcome.closed_now) == 1
    assert all(outcome and outcome.row.status == "completed" for outcome in outcomes)
    row = batch_row(warehouse, batch.batch_id)
    assert (row["status"], row["reconciled"]) == ("completed", True)
    # Every contender reports the winner's completion time, not one of its own.
    assert {outcome.row.completed_at for outcome in outcomes if outcome} == {row["completed_at"]}
    # The winner's close wrote the outcome's one event, in its transaction.
    with warehouse.connect() as connection:
        events = connection.execute(
            select(OutboxEvent.type).where(OutboxEvent.batch_id == batch.batch_id)
        ).all()
    assert [event.type for event in events] == ["billing.batch.completed"]
