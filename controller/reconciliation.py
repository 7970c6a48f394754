"""Reconciliation: does the warehouse hold exactly the batch that intake accepted?

Intake took control totals of the batch file (:class:`~shared.domain.transactions.ControlTotals`:
transaction count, quantity sum, id checksum). When a batch closes they are compared with
the warehouse's, at a cost per batch, not per row — every figure is an aggregate the
database computes:

* **transaction count and quantity sum**: ``COUNT`` and ``SUM(quantity)`` over the batch's
  ``charges`` rows themselves, so a charge lost, duplicated, added, or its quantity altered
  after it was loaded changes them;
* **id checksum**: the sum, modulo 2**64, of the chunks' *partial* checksums kept on their
  applied marks (:mod:`shared.warehouse.id_checksum_halves`). The reducer computes each
  partial from the very transaction ids it loads, and writes it in the same database
  transaction as those charge rows: the partials of a batch are exactly the ids that were
  committed, chunk by chunk, never a count kept on the side. A lost, duplicated or
  substituted id *in what the pipeline delivered* changes the sum.

What the checksum no longer proves is that the rows still hold those ids: it is not
recomputed from ``charges``. A charge row deleted or added behind the controller's back is
caught by the count (and its invoice, below); one whose quantity or amounts were altered,
by the quantity sum or its invoice; but a row whose ``transaction_id`` alone was rewritten
to an id not in the batch, leaving count, quantity and amounts as they were, is **not**
caught at close. (The unique key ``(batch_id, transaction_id)`` still forbids rewriting it
to an id the batch already holds.) Proving the stored ids would mean hashing every one of
them again, per row, which is what the close used to do.

The second check is internal: every invoice (the running sum the reducer upserts chunk by
chunk) must equal the sum of its charges, figure by figure — one ``GROUP BY`` over
invoices and negated charges in SQL. Both checks are read-only, so any controller may run
them at any time.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Connection, Engine, func, literal, or_, select, union_all

from shared.domain.charges import INVOICE_SUMS
from shared.domain.transactions import ControlTotals
from shared.warehouse.id_checksum_halves import join_sums
from shared.warehouse.models import AppliedChunk, Charge, Invoice

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
    """Count and quantity over the charges, the id checksum over the applied marks: in SQL."""
    transactions, quantity = charge_totals(connection, batch_id)
    return ControlTotals(
        transactions=transactions,
        quantity=quantity,
        id_checksum=applied_id_checksum(connection, batch_id),
    )


def charge_totals(connection: Connection, batch_id: str) -> tuple[int, int]:
    """How many charge rows the batch has, and the sum of their quantities."""
    transactions, quantity = connection.execute(
        select(func.count(), func.coalesce(func.sum(Charge.quantity), 0)).where(
            Charge.batch_id == batch_id
        )
    ).one()
    return int(transactions), int(quantity)


def applied_id_checksum(connection: Connection, batch_id: str) -> int:
    """The sum modulo 2**64 of the partial id checksums on the batch's applied marks."""
    high_sum, low_sum = connection.execute(
        select(
            func.coalesce(func.sum(AppliedChunk.id_checksum_high), 0),
            func.coalesce(func.sum(AppliedChunk.id_checksum_low), 0),
        ).where(AppliedChunk.batch_id == batch_id)
    ).one()
    return join_sums(int(high_sum), int(low_sum))


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
