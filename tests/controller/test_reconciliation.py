"""The close: invoices written from the charges once, and the reconciliation's checks
(control totals, id checksum, invoice figures against the processors' chunk sums)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from controller import completion
from controller.reconciliation import Reconciliation, reconcile, write_invoices
from controller.results import ResultHandler
from controller.worker import build_result_handler, order_id_allocator
from shared.contracts.batch_records import BatchRecords
from shared.contracts.blob_compression import compress, decompress
from shared.contracts.chunk_result import decode_result_rows
from shared.contracts.messages import ChunkResult
from shared.contracts.result_table import SCHEMA_V3
from shared.domain.charges import INVOICE_SUMS
from shared.domain.transactions import ControlTotals, id_checksum_of
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import AppliedChunk, Charge, Invoice
from tests.controller.batches import (
    PublishedBatch,
    control_totals,
    make_transactions,
    publish_batch,
)
from tests.controller.checks import batch_row


def invoices(engine: Engine, batch_id: str) -> dict[str, tuple[int, ...]]:
    columns = [Invoice.__table__.c[name] for name in INVOICE_SUMS]
    with engine.connect() as connection:
        rows = connection.execute(
            select(Invoice.customer_id, *columns).where(Invoice.batch_id == batch_id)
        ).all()
    return {row[0]: tuple(row[1:]) for row in rows}


def sums_of_charges(engine: Engine, batch_id: str) -> dict[str, tuple[int, ...]]:
    figures = [func.count(), *(func.sum(Charge.__table__.c[n]) for n in INVOICE_SUMS[1:])]
    with engine.connect() as connection:
        rows = connection.execute(
            select(Charge.customer_id, *figures)
            .where(Charge.batch_id == batch_id)
            .group_by(Charge.customer_id)
        ).all()
    return {row[0]: tuple(int(value) for value in row[1:]) for row in rows}


@contextmanager
def closing_transaction(
    engine: Engine, batch_id: str, control: ControlTotals
) -> Iterator[Reconciliation]:
    """What a close finds now (invoices written and checked), rolled back afterwards."""
    with engine.connect() as connection:
        transaction = connection.begin()
        try:
            write_invoices(connection, batch_id)
            yield reconcile(connection, batch_id, control)
        finally:
            transaction.rollback()


def handler_for(settings: Settings, storage: StorageAccount, warehouse: Engine) -> ResultHandler:
    return build_result_handler(settings, storage, warehouse, order_id_allocator(settings, storage))


def two_chunk_batch(settings: Settings, storage: StorageAccount, batch_id: str) -> PublishedBatch:
    transactions = make_transactions(40, seed=43, customers=3)
    return publish_batch(storage, settings, batch_id, transactions, chunk_size=20)


def test_an_intact_batch_closes_with_one_invoice_per_customer_equal_to_its_charges(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    batch = two_chunk_batch(settings, storage, "b-intact")
    handler = handler_for(settings, storage, warehouse)

    handler.handle_text(batch.results[0].to_text())
    assert invoices(warehouse, "b-intact") == {}, "an open batch has no invoices yet"
    handler.handle_text(batch.results[1].to_text())

    row = batch_row(warehouse, "b-intact")
    assert (row["status"], row["reconciled"]) == ("completed", True)
    written = invoices(warehouse, "b-intact")
    assert written == sums_of_charges(warehouse, "b-intact")
    assert set(written) == {tx.customer_id for tx in batch.transactions}
    control = control_totals(batch.transactions)
    with closing_transaction(warehouse, "b-intact", control) as again:
        assert again.reconciled
        assert again.invoice_sums == again.applied_sums
        assert again.warehouse == control
        assert "b-intact reconciled" in again.describe()


def _delete_a_charge(connection: Connection, batch_id: str) -> None:
    victim = select(func.min(Charge.order_id)).where(Charge.batch_id == batch_id)
    connection.execute(delete(Charge).where(Charge.order_id == victim.scalar_subquery()))


def _alter_a_quantity(connection: Connection, batch_id: str) -> None:
    victim = select(func.min(Charge.order_id)).where(Charge.batch_id == batch_id)
    connection.execute(
        update(Charge)
        .where(Charge.order_id == victim.scalar_subquery())
        .values(quantity=Charge.quantity + 1)
    )


def _alter_an_amount(connection: Connection, batch_id: str) -> None:
    """Count and quantity untouched: only the invoice figures against the marks see it."""
    victim = select(func.min(Charge.order_id)).where(Charge.batch_id == batch_id)
    connection.execute(
        update(Charge)
        .where(Charge.order_id == victim.scalar_subquery())
        .values(tax=Charge.tax + 3, total=Charge.total + 3)
    )


def _add_a_charge(connection: Connection, batch_id: str) -> None:
    """A copy of an existing charge under a fresh id."""
    table = Charge.__table__
    row = connection.execute(select(table).where(Charge.batch_id == batch_id).limit(1)).one()
    order_id = connection.scalar(select(func.max(Charge.order_id))) + 1_000_000
    connection.execute(
        insert(table).values(
            dict(row._mapping) | {"order_id": order_id, "transaction_id": "tx-smuggled"}
        )
    )


def _alter_a_marks_sums(connection: Connection, batch_id: str) -> None:
    """A chunk's applied figures that disagree with its rows (as a faulty processor's would)."""
    connection.execute(
        update(AppliedChunk)
        .where(AppliedChunk.batch_id == batch_id, AppliedChunk.chunk == 0)
        .values(sum_net=AppliedChunk.sum_net - 1, sum_total=AppliedChunk.sum_total - 1)
    )


Tampering = Callable[[Connection, str], None]


@pytest.mark.parametrize(
    "tamper",
    [_delete_a_charge, _alter_a_quantity, _alter_an_amount, _add_a_charge, _alter_a_marks_sums],
    ids=["deleted", "quantity-altered", "amount-altered", "added", "mark-sums-altered"],
)
def test_a_charge_or_mark_tampered_with_behind_the_controllers_back_leaves_the_batch_unreconciled(
    settings: Settings, storage: StorageAccount, warehouse: Engine, tamper: Tampering
) -> None:
    # The first chunk is applied, then tampered with, then the second arrives and closes.
    batch = two_chunk_batch(settings, storage, "b-tampered")
    handler = handler_for(settings, storage, warehouse)
    handler.handle_text(batch.results[0].to_text())
    with warehouse.begin() as connection:
        tamper(connection, batch.batch_id)
    handler.handle_text(batch.results[1].to_text())

    row = batch_row(warehouse, batch.batch_id)
    assert (row["status"], row["reconciled"]) == ("completed", False)
    stored = BatchRecords(storage.table(settings.batches_table)).find(batch.batch_id)
    assert stored is not None
    assert stored.record.reconciled is False
    # Whatever changed, every invoice is the sum of the charges as the close found them.
    assert invoices(warehouse, batch.batch_id) == sums_of_charges(warehouse, batch.batch_id)


def test_an_altered_amount_shows_as_the_figures_it_changed(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    batch = two_chunk_batch(settings, storage, "b-amount")
    handler = handler_for(settings, storage, warehouse)
    for result in batch.results:
        handler.handle_text(result.to_text())
    with warehouse.begin() as connection:
        _alter_an_amount(connection, batch.batch_id)
    control = control_totals(batch.transactions)

    with closing_transaction(warehouse, batch.batch_id, control) as found:
        assert found.totals_match  # count, quantity and ids are as intake counted
        assert found.invoice_differences == {"tax": 3, "total": 3}
        assert not found.reconciled
        assert "invoices' tax minus the chunks' sums: 3" in found.describe()


def test_a_result_whose_sums_disagree_with_its_rows_is_applied_but_never_reconciles(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    batch = two_chunk_batch(settings, storage, "b-wrong-sums")
    results = storage.container(settings.results_container)
    message = batch.results[1]
    image = _image(results.get(message.result_blob).data)
    image.execute("UPDATE header SET lines = lines + 1, quantity = quantity + 2")
    wrong = _republish(storage, settings, message, image)
    handler = handler_for(settings, storage, warehouse)

    handler.handle_text(batch.results[0].to_text())
    handler.handle_text(wrong.to_text())

    row = batch_row(warehouse, batch.batch_id)
    assert (row["status"], row["reconciled"]) == ("completed", False)
    with closing_transaction(
        warehouse, batch.batch_id, control_totals(batch.transactions)
    ) as found:
        assert found.totals_match
        assert found.invoice_differences == {"lines": -1, "quantity": -2}


def test_a_rewritten_transaction_id_alone_is_not_caught_at_close(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    # The limit the reconciliation's docstring states: the id checksum is summed from the
    # partials the reducer wrote, not recomputed from the rows, so an id rewritten in place
    # (count, quantity and amounts untouched) goes unnoticed.
    batch = two_chunk_batch(settings, storage, "b-rewritten")
    handler = handler_for(settings, storage, warehouse)
    handler.handle_text(batch.results[0].to_text())
    forged = batch.chunks[0][7].transaction_id
    with warehouse.begin() as connection:
        connection.execute(
            update(Charge)
            .where(Charge.batch_id == "b-rewritten", Charge.transaction_id == forged)
            .values(transaction_id="tx-forged")
        )
    handler.handle_text(batch.results[1].to_text())

    assert batch_row(warehouse, "b-rewritten")["reconciled"] is True
    with warehouse.connect() as connection:
        stored_ids = connection.scalars(
            select(Charge.transaction_id).where(Charge.batch_id == "b-rewritten")
        ).all()
    assert id_checksum_of(stored_ids) != control_totals(batch.transactions).id_checksum


class CrashAfterTheInvoicesError(RuntimeError):
    pass


def test_a_crash_between_the_invoices_and_the_outcome_writes_nothing_and_the_next_tally_closes(
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch = two_chunk_batch(settings, storage, "b-crash")
    handler = handler_for(settings, storage, warehouse)
    handler.handle_text(batch.results[0].to_text())
    record_event = completion._record_event
    calls = []

    def crash_once(*args: object, **kwargs: object) -> None:
        calls.append(1)
        if len(calls) == 1:  # the invoices are written, uncommitted: the process dies
            raise CrashAfterTheInvoicesError
        record_event(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(completion, "_record_event", crash_once)
    with pytest.raises(CrashAfterTheInvoicesError):
        handler.handle_text(batch.results[1].to_text())

    assert batch_row(warehouse, "b-crash")["status"] in ("accepted", "processing")
    assert invoices(warehouse, "b-crash") == {}, "the invoices went with the close"

    handler.handle_text(batch.results[1].to_text())  # the redelivery: applied, so it settles
    handler.handle_text(batch.results[1].to_text())  # and once more: closed, nothing written

    row = batch_row(warehouse, "b-crash")
    assert (row["status"], row["reconciled"]) == ("completed", True)
    assert invoices(warehouse, "b-crash") == sums_of_charges(warehouse, "b-crash")
    assert len(calls) == 2, "one close wrote the outcome"


def _image(blob: bytes) -> sqlite3.Connection:
    image = sqlite3.connect(":memory:", isolation_level=None)
    image.deserialize(decompress(blob))
    return image


def _republish(
    storage: StorageAccount, settings: Settings, message: ChunkResult, image: sqlite3.Connection
) -> ChunkResult:
    blob = compress(image.serialize())
    image.close()
    storage.container(settings.results_container).put(message.result_blob, blob)
    return message.model_copy(update={"sha256": hashlib.sha256(blob).hexdigest()})


def test_an_older_processors_result_with_per_customer_subtotals_is_applied_and_reconciles(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    """A version 3 image (a ``subtotals`` table, no sums in the header), as a processor of
    the previous release writes it, beside a current one in the same batch."""
    batch = two_chunk_batch(settings, storage, "b-old-processor")
    results = storage.container(settings.results_container)
    message = batch.results[0]
    current = _image(results.get(message.result_blob).data)
    old = sqlite3.connect(":memory:", isolation_level=None)
    for sql in SCHEMA_V3.values():
        old.execute(sql)
    header = current.execute(
        "SELECT 3, batch_id, chunk, currency, pricebook_version, id_checksum FROM header"
    ).fetchone()
    old.execute("INSERT INTO header VALUES (?, ?, ?, ?, ?, ?)", header)
    old.executemany(
        f"INSERT INTO rows VALUES ({', '.join('?' * 12)})",
        current.execute("SELECT * FROM rows ORDER BY rowid"),
    )
    sums = ", ".join(["count(*)", *(f"sum({name})" for name in INVOICE_SUMS[1:])])
    old.executemany(
        "INSERT INTO subtotals VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        current.execute(f"SELECT customer_id, {sums} FROM rows GROUP BY customer_id"),
    )
    current.close()
    older = _republish(storage, settings, message, old)
    assert "subtotals" in {
        name
        for (name,) in _image(results.get(message.result_blob).data).execute(
            "SELECT name FROM sqlite_schema"
        )
    }
    assert decode_result_rows(results.get(message.result_blob).data).invoice_sums[0] == 20
    handler = handler_for(settings, storage, warehouse)

    handler.handle_text(older.to_text())
    handler.handle_text(batch.results[1].to_text())

    row = batch_row(warehouse, batch.batch_id)
    assert (row["status"], row["reconciled"]) == ("completed", True)
    assert invoices(warehouse, batch.batch_id) == sums_of_charges(warehouse, batch.batch_id)


def test_a_failed_batch_has_its_applied_chunks_invoices_and_a_redrive_rewrites_them_all(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    batch = two_chunk_batch(settings, storage, "b-redrive")
    handler = handler_for(settings, storage, warehouse)
    handler.handle_text(batch.chunk_failed(1).to_text())
    handler.handle_text(batch.results[0].to_text())

    assert batch_row(warehouse, "b-redrive")["status"] == "failed"
    first = invoices(warehouse, "b-redrive")
    assert sum(lines for lines, *_ in first.values()) == len(batch.chunks[0])
    assert first == sums_of_charges(warehouse, "b-redrive")

    handler.handle_text(batch.results[1].to_text())  # the poisoned chunk, redriven and applied

    row = batch_row(warehouse, "b-redrive")
    assert (row["status"], row["reconciled"]) == ("completed", True)
    again = invoices(warehouse, "b-redrive")
    assert sum(lines for lines, *_ in again.values()) == len(batch.transactions)
    assert again == sums_of_charges(warehouse, "b-redrive")
