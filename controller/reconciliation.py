"""The close's invoices and reconciliation: does the warehouse hold exactly the batch accepted?

When every chunk of a batch is settled, the controller that closes it
(:mod:`controller.completion`) does all of this in the one database transaction whose
conditional update moves the batch's row, so it happens once per close and never halfway:

1. **invoices** (:func:`write_invoices`): the batch's invoices are replaced by the sums of
   its charges per customer, one ``INSERT INTO invoices … SELECT … FROM charges WHERE
   batch_id = ? GROUP BY customer_id``. The database reads the batch's charges once
   (through the unique ``(batch_id, transaction_id)`` key) and sorts them by customer: no
   row reaches Python, and no per-chunk upsert runs while the batch is processing;
2. **reconciliation** (:func:`reconcile`), from aggregates the database computes, one row
   per invoice or per chunk, never one per charge:

   * **transaction count and quantity sum**: the sums of the new invoices' ``lines`` and
     ``quantity``, that is ``COUNT`` and ``SUM(quantity)`` over the batch's ``charges`` rows
     themselves, compared with intake's control totals
     (:class:`~shared.domain.transactions.ControlTotals`): a charge lost, duplicated, added,
     or its quantity altered after it was loaded changes them;
   * **id checksum**: the sum, modulo 2**64, of the chunks' *partial* checksums kept on their
     applied marks (:mod:`shared.warehouse.id_checksum_halves`). Each partial covers the
     transaction ids of one result's rows: the processor that rated them computed it (or,
     for a result without one, the reducer), and the reducer writes it in the same database
     transaction as those very rows. A lost, duplicated or substituted id *in what the
     pipeline delivered* changes the sum;
   * **invoice sums**: each invoice figure (lines, quantity, gross, discount, net, tax,
     total) summed over the batch's invoices must equal the same figure summed over the
     batch's applied marks, which carry each chunk's sums as the processor that rated it
     computed them from its rows, written with those rows. The invoices come from the
     charges as they are at close, the marks' sums from the rows as they were rated, so a
     charge whose amounts were altered, or a row lost or added between the rating and the
     close, shows up as a difference in the figures it touched.

What these checks do not prove: the id checksum is not recomputed from ``charges``, so a
row whose ``transaction_id`` alone was rewritten to an id not in the batch, leaving count,
quantity and amounts as they were, is not caught (the unique key still forbids rewriting it
to an id the batch already holds); and the invoice sums are per chunk, not per customer, so
amounts moved from one customer's charges to another's within a batch, every total kept,
are not caught either. Every invoice equals the sum of its charges by construction: it is
written from them, in the transaction that checks them.

Next step (docs/walkthrough.md): ``controller.events.relay``, which publishes the batch's
outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, insert, literal, select

from shared.domain.charges import INVOICE_SUMS
from shared.domain.transactions import ControlTotals
from shared.warehouse.id_checksum_halves import join_sums
from shared.warehouse.models import MARK_SUMS, AppliedChunk, Charge, Invoice

_INVOICE_FIGURES = [Invoice.__table__.c[name] for name in INVOICE_SUMS]
_MARK_FIGURES = [AppliedChunk.__table__.c[name] for name in MARK_SUMS]


@dataclass(frozen=True)
class Reconciliation:
    """What the close found: intake's control totals against the warehouse's, and the
    batch's invoice figures against the sums its applied marks carry."""

    batch_id: str
    control: ControlTotals
    warehouse: ControlTotals
    #: each :data:`INVOICE_SUMS` figure summed over the batch's invoices
    invoice_sums: dict[str, int]
    #: the same figures summed over the batch's applied marks (the processors' chunk sums)
    applied_sums: dict[str, int]

    @property
    def totals_match(self) -> bool:
        return self.control == self.warehouse

    @property
    def invoice_differences(self) -> dict[str, int]:
        """The figures whose invoices' sum is not the marks': invoices minus marks."""
        return {
            name: self.invoice_sums[name] - self.applied_sums[name]
            for name in INVOICE_SUMS
            if self.invoice_sums[name] != self.applied_sums[name]
        }

    @property
    def reconciled(self) -> bool:
        return self.totals_match and not self.invoice_differences

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
            f"invoices' {name} minus the chunks' sums: {difference}"
            for name, difference in self.invoice_differences.items()
        )
        return f"batch {self.batch_id} does NOT reconcile: " + "; ".join(parts)


def write_invoices(connection: Connection, batch_id: str) -> None:
    """Replace the batch's invoices by its charges' sums per customer, in the connection's
    open transaction (a batch closed failed and then redriven is closed again: its
    invoices are written anew, with the chunks applied since)."""
    connection.execute(delete(Invoice).where(Invoice.batch_id == batch_id))
    per_customer = (
        select(
            literal(batch_id),
            Charge.customer_id,
            func.min(Charge.currency),
            func.count(),
            *(func.sum(Charge.__table__.c[name]) for name in INVOICE_SUMS[1:]),
        )
        .where(Charge.batch_id == batch_id)
        .group_by(Charge.customer_id)
    )
    columns = ["batch_id", "customer_id", "currency", *INVOICE_SUMS]
    connection.execute(insert(Invoice).from_select(columns, per_customer))


def reconcile(connection: Connection, batch_id: str, control: ControlTotals) -> Reconciliation:
    """Compare the batch's invoices (written by :func:`write_invoices` in the same
    transaction), applied marks and intake's ``control`` totals."""
    invoices = connection.execute(
        select(*(func.coalesce(func.sum(column), 0) for column in _INVOICE_FIGURES)).where(
            Invoice.batch_id == batch_id
        )
    ).one()
    marks = connection.execute(
        select(
            func.coalesce(func.sum(AppliedChunk.id_checksum_high), 0),
            func.coalesce(func.sum(AppliedChunk.id_checksum_low), 0),
            *(func.coalesce(func.sum(column), 0) for column in _MARK_FIGURES),
        ).where(AppliedChunk.batch_id == batch_id)
    ).one()
    invoice_sums = dict(zip(INVOICE_SUMS, map(int, invoices), strict=True))
    applied_sums = dict(zip(INVOICE_SUMS, map(int, marks[2:]), strict=True))
    return Reconciliation(
        batch_id=batch_id,
        control=control,
        warehouse=ControlTotals(
            transactions=invoice_sums["lines"],
            quantity=invoice_sums["quantity"],
            id_checksum=join_sums(int(marks[0]), int(marks[1])),
        ),
        invoice_sums=invoice_sums,
        applied_sums=applied_sums,
    )
