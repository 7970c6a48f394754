"""Reconciliation computed from the warehouse: totals, id checksum, invoices vs charges."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from controller.reconciliation import (
    SPLIT_SCAN_FROM,
    SQLITE_SCAN_PARTS,
    ChargeScan,
    InvoiceMismatch,
    join_scans,
    reconcile,
    scan_parts,
)
from controller.worker import build_result_handler, order_id_allocator
from shared.contracts.batch_records import BatchRecords
from shared.domain.transactions import id_checksum_of
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import Charge, Invoice
from tests.controller.batches import control_totals, make_transactions, publish_batch
from tests.controller.checks import batch_row


def applied_batch(
    settings: Settings, storage: StorageAccount, warehouse: Engine, batch_id: str
) -> list[str]:
    """Apply a small batch through the handler; returns its customers."""
    transactions = make_transactions(40, seed=41, customers=4)
    batch = publish_batch(storage, settings, batch_id, transactions, chunk_size=40)
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    handler.handle_text(batch.results[0].to_text())
    return sorted({tx.customer_id for tx in transactions})


def test_an_intact_batch_reconciles_with_its_control_totals(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    applied_batch(settings, storage, warehouse, "b-intact")
    control = control_totals(make_transactions(40, seed=41, customers=4))

    result = reconcile(warehouse, "b-intact", control)

    assert result.warehouse == control
    assert result.invoice_mismatches == []
    assert result.reconciled
    assert "b-intact reconciled" in result.describe()


def test_a_lost_charge_and_a_drifted_invoice_are_both_found(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    customers = applied_batch(settings, storage, warehouse, "b-drift")
    control = control_totals(make_transactions(40, seed=41, customers=4))
    lost_id = "tx-41-00007"
    with warehouse.begin() as connection:
        lost = connection.execute(
            delete(Charge)
            .where(Charge.batch_id == "b-drift", Charge.transaction_id == lost_id)
            .returning(Charge.customer_id, Charge.quantity, Charge.total)
        ).one()
        drifted = next(customer for customer in customers if customer != lost.customer_id)
        connection.execute(
            update(Invoice)
            .where(Invoice.batch_id == "b-drift", Invoice.customer_id == drifted)
            .values(tax=Invoice.tax + 3, total=Invoice.total + 3)
        )
        connection.execute(
            insert(Invoice).values(
                batch_id="b-drift",
                customer_id="cust-ghost",
                currency="USD",
                lines=1,
                quantity=1,
                gross=100,
                discount=0,
                net=100,
                tax=0,
                total=100,
            )
        )

    result = reconcile(warehouse, "b-drift", control)

    assert not result.reconciled
    assert result.warehouse.transactions == control.transactions - 1
    assert result.warehouse.quantity == control.quantity - lost.quantity
    # The id checksum sums the partials written when the chunk was applied: it still says
    # what was loaded. The count, the quantity and the invoice are what catch the loss.
    assert result.warehouse.id_checksum == control.id_checksum
    mismatches = {m.customer_id: m.differences for m in result.invoice_mismatches}
    # The lost charge's customer: its invoice still counts the charge.
    lost_customer = mismatches[lost.customer_id]
    assert (lost_customer["lines"], lost_customer["quantity"], lost_customer["total"]) == (
        1,
        lost.quantity,
        lost.total,
    )
    assert mismatches[drifted] == {"tax": 3, "total": 3}
    assert mismatches["cust-ghost"] == {
        "lines": 1,
        "quantity": 1,
        "gross": 100,
        "net": 100,
        "total": 100,
    }
    assert set(mismatches) == {lost.customer_id, drifted, "cust-ghost"}
    description = result.describe()
    assert "does NOT reconcile" in description
    assert f"transactions: control {control.transactions}" in description


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


def _add_a_charge(connection: Connection, batch_id: str) -> None:
    """A copy of an existing charge under a fresh id, invoice left alone."""
    table = Charge.__table__
    row = connection.execute(select(table).where(Charge.batch_id == batch_id).limit(1)).one()
    order_id = connection.scalar(select(func.max(Charge.order_id))) + 1_000_000
    connection.execute(
        insert(table).values(
            dict(row._mapping) | {"order_id": order_id, "transaction_id": "tx-smuggled"}
        )
    )


Tampering = Callable[[Connection, str], None]


@pytest.mark.parametrize(
    "tamper",
    [_delete_a_charge, _alter_a_quantity, _add_a_charge],
    ids=["deleted", "quantity-altered", "added"],
)
def test_a_charge_tampered_with_behind_the_controllers_back_leaves_the_batch_unreconciled(
    settings: Settings, storage: StorageAccount, warehouse: Engine, tamper: Tampering
) -> None:
    # Two chunks: the first is applied, then its rows are tampered with, then the second
    # arrives and closes the batch. The partial id checksums are as the reducer wrote them.
    transactions = make_transactions(40, seed=43, customers=3)
    batch = publish_batch(storage, settings, "b-tampered-rows", transactions, chunk_size=20)
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    handler.handle_text(batch.results[0].to_text())
    with warehouse.begin() as connection:
        tamper(connection, batch.batch_id)
    handler.handle_text(batch.results[1].to_text())

    row = batch_row(warehouse, batch.batch_id)
    assert (row["status"], row["reconciled"]) == ("completed", False)
    stored = BatchRecords(storage.table(settings.batches_table)).find(batch.batch_id)
    assert stored is not None
    record = stored.record
    assert record.reconciled is False
    control = control_totals(transactions)
    assert record.warehouse_totals is not None
    assert record.warehouse_totals != control
    assert record.warehouse_totals.id_checksum == control.id_checksum  # see the next test


def test_a_rewritten_transaction_id_alone_is_not_caught_at_close(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    # The limit the reconciliation's docstring states: the id checksum is summed from the
    # partials the reducer wrote, not recomputed from the rows, so an id rewritten in place
    # (count, quantity and amounts untouched) goes unnoticed. Rehashing the rows' ids (what
    # the close did before, per row) would see it.
    applied_batch(settings, storage, warehouse, "b-rewritten")
    control = control_totals(make_transactions(40, seed=41, customers=4))
    with warehouse.begin() as connection:
        connection.execute(
            update(Charge)
            .where(Charge.batch_id == "b-rewritten", Charge.transaction_id == "tx-41-00007")
            .values(transaction_id="tx-forged")
        )
        stored_ids = connection.scalars(
            select(Charge.transaction_id).where(Charge.batch_id == "b-rewritten")
        ).all()

    assert reconcile(warehouse, "b-rewritten", control).reconciled
    assert id_checksum_of(stored_ids) != control.id_checksum


def test_a_scan_in_parts_finds_exactly_what_one_scan_finds(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    # Mismatches at both ends of the customer ids and in between, a ghost invoice sorting
    # after every real customer, and a charge whose customer has no invoice at all: split
    # anywhere, the parts must add up to the one scan's totals and name the same invoices.
    transactions = make_transactions(60, seed=47, customers=9)
    batch = publish_batch(storage, settings, "b-parts", transactions, chunk_size=60)
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    handler.handle_text(batch.results[0].to_text())
    customers = sorted({tx.customer_id for tx in transactions})
    with warehouse.begin() as connection:
        for customer in (customers[0], customers[4], customers[-1]):
            connection.execute(
                update(Invoice)
                .where(Invoice.batch_id == "b-parts", Invoice.customer_id == customer)
                .values(net=Invoice.net + 1)
            )
        connection.execute(
            delete(Invoice).where(
                Invoice.batch_id == "b-parts", Invoice.customer_id == customers[2]
            )
        )
        ghost = dict.fromkeys(("quantity", "gross", "discount", "net", "tax", "total"), 0)
        connection.execute(
            insert(Invoice).values(
                batch_id="b-parts", customer_id="zz-ghost", currency="USD", lines=1, **ghost
            )
        )
    control = control_totals(transactions)

    whole = reconcile(warehouse, "b-parts", control, parts=1)
    named = [mismatch.customer_id for mismatch in whole.invoice_mismatches]
    assert named == [customers[0], customers[2], customers[4], customers[-1], "zz-ghost"]
    assert whole.warehouse == control
    for parts in (2, 3, 4, 9, 20):
        assert reconcile(warehouse, "b-parts", control, parts=parts) == whole, parts


def test_parts_keep_the_limit_on_named_invoices() -> None:
    def scan(*customers: str) -> ChargeScan:
        mismatches = [InvoiceMismatch(customer, {"net": 1}) for customer in customers]
        return ChargeScan(transactions=len(customers), quantity=1, invoice_mismatches=mismatches)

    joined = join_scans([scan("c", "d"), scan("a", "e"), scan("b")], limit=3)
    assert [m.customer_id for m in joined.invoice_mismatches] == ["a", "b", "c"]
    assert (joined.transactions, joined.quantity) == (5, 3)


def test_only_a_large_batch_on_sqlite_is_scanned_in_parts(warehouse: Engine) -> None:
    large = scan_parts(warehouse, SPLIT_SCAN_FROM)
    assert scan_parts(warehouse, SPLIT_SCAN_FROM - 1) == 1
    assert large == (SQLITE_SCAN_PARTS if warehouse.dialect.name == "sqlite" else 1)
