"""Assertions on the warehouse: every charge and invoice against the reference rater."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, func, select

from controller.warehouse.models import AppliedChunk, Batch, Charge, Invoice
from shared.transactions import Transaction
from tests.controller.reference import INVOICE_FIGURES, reference_charge, reference_invoices

CHARGE_FIELDS = (
    "transaction_id",
    "customer_id",
    "sku",
    "region",
    "quantity",
    "occurred_at",
    "currency",
    "unit_price",
    "gross",
    "discount",
    "net",
    "tax",
    "total",
)


def charges_of(engine: Engine, batch_id: str) -> list[dict[str, Any]]:
    columns = [Charge.__table__.c[name] for name in ("order_id", "chunk", *CHARGE_FIELDS)]
    with engine.connect() as connection:
        rows = connection.execute(select(*columns).where(Charge.batch_id == batch_id)).all()
    return [dict(row._mapping) for row in rows]


def invoices_of(engine: Engine, batch_id: str) -> dict[str, dict[str, int]]:
    columns = [Invoice.__table__.c[name] for name in INVOICE_FIGURES]
    with engine.connect() as connection:
        rows = connection.execute(
            select(Invoice.customer_id, *columns).where(Invoice.batch_id == batch_id)
        ).all()
    return {row.customer_id: {name: getattr(row, name) for name in INVOICE_FIGURES} for row in rows}


def batch_row(engine: Engine, batch_id: str) -> dict[str, Any]:
    with engine.connect() as connection:
        row = connection.execute(select(Batch.__table__).where(Batch.batch_id == batch_id)).one()
    return dict(row._mapping)


def applied_chunk_count(engine: Engine, batch_id: str) -> int:
    with engine.connect() as connection:
        count = connection.scalar(
            select(func.count()).select_from(AppliedChunk).where(AppliedChunk.batch_id == batch_id)
        )
    return int(count or 0)


def assert_charges_match_the_reference(
    engine: Engine, batch_id: str, transactions: list[Transaction]
) -> None:
    """Exactly one row per transaction, each equal to the reference rater's charge."""
    stored = charges_of(engine, batch_id)
    by_id = {row["transaction_id"]: row for row in stored}
    assert len(stored) == len(by_id) == len(transactions), "one row per transaction"
    assert len({row["order_id"] for row in stored}) == len(stored), "order ids are unique"
    assert all(row["order_id"] >= 1 for row in stored)
    for tx in transactions:
        row = by_id[tx.transaction_id]
        expected = reference_charge(tx)
        assert {name: row[name] for name in CHARGE_FIELDS} == expected, tx.transaction_id


def assert_invoices_match_the_reference(
    engine: Engine, batch_id: str, transactions: list[Transaction]
) -> None:
    assert invoices_of(engine, batch_id) == reference_invoices(transactions)
