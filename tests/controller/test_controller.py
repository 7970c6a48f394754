"""The controller worker end to end: output queue in, warehouse and batch record out."""

from __future__ import annotations

import logging
import time

import pytest
from sqlalchemy import Engine

from shared.contracts.batch_records import BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import control_totals, make_transactions, publish_batch
from tests.controller.checks import (
    applied_chunk_count,
    assert_charges_match_the_reference,
    assert_invoices_match_the_reference,
    batch_row,
)
from tests.controller.conftest import WorkerFactory, wait_until_closed

CHUNK_SIZE = 25


def send(storage: StorageAccount, settings: Settings, *texts: str) -> None:
    output = storage.queue(settings.output_queue)
    for text in texts:
        output.send(text)


def test_every_charge_and_invoice_matches_the_reference_and_the_batch_reconciles(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    transactions = make_transactions(120)
    batch = publish_batch(storage, settings, "b-exact", transactions, chunk_size=CHUNK_SIZE)
    send(storage, settings, *(message.to_text() for message in batch.results))

    worker = start_worker()
    record = wait_until_closed(storage, settings, batch.batch_id)

    assert_charges_match_the_reference(warehouse, batch.batch_id, transactions)
    assert_invoices_match_the_reference(warehouse, batch.batch_id, transactions)
    control = control_totals(transactions)
    row = batch_row(warehouse, batch.batch_id)
    assert row["status"] == "completed"
    assert row["reconciled"] is True
    assert (row["warehouse_transactions"], row["warehouse_quantity"]) == (
        control.transactions,
        control.quantity,
    )
    assert row["warehouse_id_checksum"] == control.id_checksum
    # The record (what GET /batches/{id} shows) carries the same outcome.
    assert record.status is BatchStatus.COMPLETED
    assert record.reconciled is True
    assert record.warehouse_totals == control
    assert (record.chunks_applied, record.chunks_failed) == (len(batch.chunks), 0)
    assert record.completed_at == row["completed_at"]
    snapshot = worker.snapshot()
    assert snapshot.chunks_applied == len(batch.chunks)
    assert snapshot.batches_closed == 1


def test_a_result_delivered_twice_lands_once_and_reconciles(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    transactions = make_transactions(75, seed=11)
    batch = publish_batch(storage, settings, "b-twice", transactions, chunk_size=CHUNK_SIZE)
    # Every result twice, the duplicates interleaved with the originals.
    send(storage, settings, *(m.to_text() for m in batch.results for _ in range(2)))

    worker = start_worker()
    record = wait_until_closed(storage, settings, batch.batch_id)
    storage_queue = storage.queue(settings.output_queue)
    for _ in range(100):  # the duplicates of the last chunks may still be in flight
        # Counted as skipped once handled, deleted only after: wait for both.
        skipped = worker.snapshot().chunks_skipped == len(batch.chunks)
        if skipped and storage_queue.approximate_count() == 0:
            break
        time.sleep(0.05)

    assert_charges_match_the_reference(warehouse, batch.batch_id, transactions)
    assert_invoices_match_the_reference(warehouse, batch.batch_id, transactions)
    assert applied_chunk_count(warehouse, batch.batch_id) == len(batch.chunks)
    assert record.reconciled is True
    snapshot = worker.snapshot()
    assert (snapshot.chunks_applied, snapshot.chunks_skipped) == (len(batch.chunks),) * 2
    assert snapshot.batches_closed == 1
    assert storage_queue.approximate_count() == 0


def test_a_failed_chunk_fails_the_batch_and_names_it(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    transactions = make_transactions(100, seed=3)
    batch = publish_batch(storage, settings, "b-failed", transactions, chunk_size=CHUNK_SIZE)
    failed = batch.chunk_failed(2)
    others = [m for m in batch.results if m.chunk != 2]
    send(storage, settings, failed.to_text(), failed.to_text(), *(m.to_text() for m in others))

    start_worker()
    record = wait_until_closed(storage, settings, batch.batch_id)

    assert record.status is BatchStatus.FAILED
    assert record.failed_chunks == (2,)
    assert (record.chunks_applied, record.chunks_failed) == (3, 1)
    assert record.reconciled is False
    landed = [tx for index, chunk in enumerate(batch.chunks) if index != 2 for tx in chunk]
    assert record.warehouse_totals == control_totals(landed)
    assert_charges_match_the_reference(warehouse, batch.batch_id, landed)
    row = batch_row(warehouse, batch.batch_id)
    assert (row["status"], row["reconciled"]) == ("failed", False)
    assert row["completed_at"] is not None


def test_a_tampered_control_total_does_not_reconcile_and_is_logged(
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    transactions = make_transactions(50, seed=5)
    honest = control_totals(transactions)
    tampered = honest.model_copy(update={"quantity": honest.quantity + 1})
    batch = publish_batch(
        storage, settings, "b-tampered", transactions, chunk_size=CHUNK_SIZE, control=tampered
    )
    send(storage, settings, *(m.to_text() for m in batch.results))

    with caplog.at_level(logging.ERROR, logger="controller.completion"):
        start_worker()
        record = wait_until_closed(storage, settings, batch.batch_id)

    assert record.status is BatchStatus.COMPLETED  # every chunk applied ...
    assert record.reconciled is False  # ... but not what intake counted
    assert record.warehouse_totals == honest
    assert record.control_totals == tampered
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(
        "b-tampered does NOT reconcile" in message
        and f"quantity: control {tampered.quantity}, warehouse {honest.quantity}" in message
        for message in errors
    ), errors
    assert batch_row(warehouse, batch.batch_id)["reconciled"] is False


def test_two_workers_share_the_queue_and_exactly_one_closes_the_batch(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    transactions = make_transactions(200, seed=13)
    batch = publish_batch(storage, settings, "b-shared", transactions, chunk_size=10)
    send(storage, settings, *(m.to_text() for m in batch.results))

    workers = [start_worker(), start_worker()]
    record = wait_until_closed(storage, settings, batch.batch_id)

    snapshots = [worker.snapshot() for worker in workers]
    assert sum(s.batches_closed for s in snapshots) == 1
    assert sum(s.chunks_applied for s in snapshots) == len(batch.chunks)
    assert record.reconciled is True
    assert_charges_match_the_reference(warehouse, batch.batch_id, transactions)
    assert_invoices_match_the_reference(warehouse, batch.batch_id, transactions)


def test_a_result_whose_blob_does_not_match_is_poisoned_and_its_chunk_fails(
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
) -> None:
    transactions = make_transactions(50, seed=17)
    batch = publish_batch(storage, settings, "b-corrupt", transactions, chunk_size=CHUNK_SIZE)
    corrupt = batch.results[1].model_copy(update={"sha256": "0" * 64})
    send(storage, settings, batch.results[0].to_text(), corrupt.to_text())

    # The bad result fails, reappears after the 2 s visibility timeout, is dequeued a
    # second time (> max_dequeue_count), goes to the poison queue and its chunk fails.
    worker = start_worker(max_dequeue_count=1)
    record = wait_until_closed(storage, settings, batch.batch_id)

    assert record.status is BatchStatus.FAILED
    assert record.failed_chunks == (1,)
    assert worker.snapshot().listener is not None
    poison = storage.queue(f"{settings.output_queue}-poison").peek()
    assert len(poison) == 1
    assert "ResultIntegrityError" in poison[0].content
    assert BatchRecords(storage.table(settings.batches_table)).find(batch.batch_id) is not None
