"""Assertions on the warehouse: every charge and invoice against the reference rater."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, func, select

from shared.domain.transactions import Transaction
from shared.warehouse.models import AppliedChunk, Batch, Charge, Invoice
from tests.support.reference_rater import (
    INVOICE_FIGURES,
    SAMPLE_BOOK,
    reference_charge,
    reference_invoices,
)

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


def expected_row(tx: Transaction) -> dict[str, Any]:
    """The ``charges`` row of ``tx``: its own fields and the reference rater's amounts."""
    charge = reference_charge(SAMPLE_BOOK, tx.sku, tx.quantity, tx.region)
    return {
        "transaction_id": tx.transaction_id,
        "customer_id": tx.customer_id,
        "sku": tx.sku,
        "region": tx.region,
        "quantity": tx.quantity,
        "occurred_at": tx.occurred_at,
        "currency": charge.currency,
        "unit_price": charge.unit_price,
        **charge.figures(),
    }


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
        assert {name: row[name] for name in CHARGE_FIELDS} == expected_row(tx), tx.transaction_id


def assert_invoices_match_the_reference(
    engine: Engine, batch_id: str, transactions: list[Transaction]
) -> None:
    assert invoices_of(engine, batch_id) == reference_invoices(SAMPLE_BOOK, transactions)
