"""Reconciliation computed from the warehouse: totals, id checksum, invoices vs charges."""

from __future__ import annotations

from sqlalchemy import Engine, delete, insert, update

from controller.reconciliation import reconcile
from controller.worker import build_result_handler, order_id_allocator
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import Charge, Invoice
from tests.controller.batches import control_totals, make_transactions, publish_batch


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
    assert result.warehouse.id_checksum != control.id_checksum
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
