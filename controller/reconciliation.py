"""Reconciliation: does the warehouse hold exactly the batch that intake accepted?

Intake took control totals of the batch file (:class:`~shared.domain.transactions.ControlTotals`:
transaction count, quantity sum, id checksum). When a batch closes, the same three figures
are computed **from the warehouse itself** — from the ``charges`` rows, not from anything
the controller counted on the way — and compared. A lost, duplicated or substituted
transaction changes at least one of them.

The second check is internal: every invoice (the running sum the reducer upserts chunk by
chunk) must equal the sum of its charges, figure by figure. Both checks are read-only, so
any controller may run them at any time.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Connection, Engine, func, literal, or_, select, union_all

from shared.domain.charges import INVOICE_SUMS
from shared.domain.transactions import ID_CHECKSUM_MODULUS, ControlTotals, id_checksum_of
from shared.warehouse.models import Charge, Invoice

#: Transaction ids fetched per round trip while the checksum streams over a batch.
YIELD_PER = 10_000
#: A reconciliation names at most this many mismatching invoices.
MAX_REPORTED_MISMATCHES = 100


@dataclass(frozen=True)
class InvoiceMismatch:
    """An invoice that is not the sum of its charges: invoice minus charges, per figure."""

    customer_id: str
    differences: dict[str, int]


@dataclass(frozen=True)
class Reconciliation:
    batch_id: str
    control: ControlTotals
    warehouse: ControlTotals
    invoice_mismatches: list[InvoiceMismatch]

    @property
    def totals_match(self) -> bool:
        return self.control == self.warehouse

    @property
    def reconciled(self) -> bool:
        return self.totals_match and not self.invoice_mismatches

    def describe(self) -> str:
        """One line for the log: what matched and what did not."""
        if self.reconciled:
            return (
                f"batch {self.batch_id} reconciled: {self.warehouse.transactions} transactions, "
                f"quantity {self.warehouse.quantity}, id checksum {self.warehouse.id_checksum}"
            )
        parts = []
        for figure in ("transactions", "quantity", "id_checksum"):
            expected, found = getattr(self.control, figure), getattr(self.warehouse, figure)
            if expected != found:
                parts.append(f"{figure}: control {expected}, warehouse {found}")
        parts.extend(
            f"invoice of {mismatch.customer_id} minus its charges: {mismatch.differences}"
            for mismatch in self.invoice_mismatches
        )
        return f"batch {self.batch_id} does NOT reconcile: " + "; ".join(parts)


def reconcile(engine: Engine, batch_id: str, control: ControlTotals) -> Reconciliation:
    """Compare the warehouse's figures of ``batch_id`` with intake's ``control`` totals."""
    with engine.connect() as connection:
        return Reconciliation(
            batch_id=batch_id,
            control=control,
            warehouse=warehouse_totals(connection, batch_id),
            invoice_mismatches=invoice_mismatches(connection, batch_id),
        )


def warehouse_totals(connection: Connection, batch_id: str) -> ControlTotals:
    """Count and quantity in SQL; the id checksum streamed over the ids in Python.

    The checksum is a sum of blake2b hashes
    (:func:`~shared.domain.transactions.transaction_id_hash`),
    which no SQL dialect computes; the ids are fetched ``YIELD_PER`` at a time (a server-side
    cursor on PostgreSQL), so memory stays flat however large the batch.
    """
    transactions, quantity = connection.execute(
        select(func.count(), func.coalesce(func.sum(Charge.quantity), 0)).where(
            Charge.batch_id == batch_id
        )
    ).one()
    ids = connection.execute(
        select(Charge.transaction_id).where(Charge.batch_id == batch_id),
        execution_options={"yield_per": YIELD_PER},
    )
    checksum = 0
    for partition in ids.scalars().partitions():
        checksum = (checksum + id_checksum_of(partition)) % ID_CHECKSUM_MODULUS
    return ControlTotals(transactions=transactions, quantity=int(quantity), id_checksum=checksum)


def invoice_mismatches(
    connection: Connection, batch_id: str, limit: int = MAX_REPORTED_MISMATCHES
) -> list[InvoiceMismatch]:
    """Invoices that differ from the sum of their charges, in one GROUP BY query.

    Invoice rows and *negated* charge rows are stacked (``UNION ALL``) and summed per
    customer: a correct invoice sums to zero in every figure. A customer with charges but
    no invoice, or an invoice with no charges, shows up too. Portable to every dialect
    (no FULL OUTER JOIN needed).
    """
    invoice_rows = select(
        Invoice.customer_id, *(Invoice.__table__.c[name] for name in INVOICE_SUMS)
    ).where(Invoice.batch_id == batch_id)
    negated_charges = select(
        Charge.customer_id,
        literal(-1, BigInteger).label("lines"),
        *((-Charge.__table__.c[name]).label(name) for name in INVOICE_SUMS if name != "lines"),
    ).where(Charge.batch_id == batch_id)
    stacked = union_all(invoice_rows, negated_charges).subquery()
    sums = [func.sum(stacked.c[name]) for name in INVOICE_SUMS]
    query = (
        select(stacked.c.customer_id, *sums)
        .group_by(stacked.c.customer_id)
        .having(or_(*(total != 0 for total in sums)))
        .order_by(stacked.c.customer_id)
        .limit(limit)
    )
    return [
        InvoiceMismatch(
            customer_id=customer_id,
            differences={
                name: int(value) for name, value in zip(INVOICE_SUMS, figures, strict=True) if value
            },
        )
        for customer_id, *figures in connection.execute(query)
    ]
