"""Reconciliation: does the warehouse hold exactly the batch that intake accepted?

Intake took control totals of the batch file (:class:`~shared.domain.transactions.ControlTotals`:
transaction count, quantity sum, id checksum). When a batch closes they are compared with
the warehouse's. No row reaches Python: every figure is an aggregate the database
computes, the charges are read once (one indexed pass, :func:`scan_charges`), and the
checksum costs one row per chunk:

* **transaction count and quantity sum**: ``COUNT`` and ``SUM(quantity)`` over the batch's
  ``charges`` rows themselves, so a charge lost, duplicated, added, or its quantity altered
  after it was loaded changes them;
* **id checksum**: the sum, modulo 2**64, of the chunks' *partial* checksums kept on their
  applied marks (:mod:`shared.warehouse.id_checksum_halves`). Each partial covers the
  transaction ids of one result's rows: the processor that rated them computed it (or, for
  a result without one, the reducer), and the reducer writes it in the same database
  transaction as those very rows. The partials of a batch are therefore the ids that were
  committed, chunk by chunk, never a count kept on the side, and a lost, duplicated or
  substituted id *in what the pipeline delivered* changes the sum. What a partial taken by
  the processor cannot see is the reducer itself rewriting an id between the result blob
  and the insert: the reducer passes the rows through untouched (no Python code runs per
  row), and the count and invoices below still catch a row it lost or added.

What the checksum does not prove is that the rows still hold those ids: it is not
recomputed from ``charges``. A charge row deleted or added behind the controller's back is
caught by the count (and its invoice, below); one whose quantity or amounts were altered,
by the quantity sum or its invoice; but a row whose ``transaction_id`` alone was rewritten
to an id not in the batch, leaving count, quantity and amounts as they were, is **not**
caught at close. (The unique key ``(batch_id, transaction_id)`` still forbids rewriting it
to an id the batch already holds.) Proving the stored ids would mean reading and hashing
every one of them again, per row, at every close.

The second check is internal: every invoice (the running sum the reducer upserts chunk by
chunk) must equal the sum of its charges, figure by figure — in the same SQL statement,
grouped by customer. Both checks are read-only, so any controller may run them at any time.

On SQLite that statement's ``GROUP BY`` sorts the batch's charges in one thread, at the very
end of the batch, when the processors are done and the other core idles: a
200,000-transaction batch's close spent 0.17-0.29 s there. A large batch is therefore
scanned in :data:`SQLITE_SCAN_PARTS` parts at once, split by customer id (each customer's
charges and invoice in one part), each on its own connection; sqlite3 lets go of the GIL
while a statement steps, so the parts run on both cores, and they add up to exactly what
one scan finds. Every part reads in a deferred transaction (``READS_ONLY``): a writer's
``BEGIN IMMEDIATE`` would make them take turns, and hold up the other controllers' writes.
PostgreSQL plans parallel aggregates itself.

Next step (docs/walkthrough.md): ``controller.events.relay``, which publishes the batch's
outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Engine,
    SQLColumnExpression,
    func,
    literal,
    null,
    or_,
    select,
    true,
    union_all,
)

from shared.domain.charges import INVOICE_SUMS
from shared.domain.transactions import ControlTotals
from shared.warehouse.engine import READS_ONLY
from shared.warehouse.id_checksum_halves import join_sums
from shared.warehouse.models import AppliedChunk, Charge, Invoice

#: A reconciliation names at most this many mismatching invoices.
MAX_REPORTED_MISMATCHES = 100
#: On SQLite, a batch of at least :data:`SPLIT_SCAN_FROM` charges is scanned in this many
#: parts at once (see the module docstring); a smaller one is quicker in one statement.
SQLITE_SCAN_PARTS = 2
SPLIT_SCAN_FROM = 50_000


@dataclass(frozen=True)
class CustomerRange:
    """Customer ids from ``first`` (inclusive) to ``end`` (exclusive); None: unbounded."""

    first: str | None = None
    end: str | None = None

    def holds(self, customer_id: SQLColumnExpression[str]) -> ColumnElement[bool]:
        condition: ColumnElement[bool] = true()
        if self.first is not None:
            condition = condition & (customer_id >= self.first)
        if self.end is not None:
            condition = condition & (customer_id < self.end)
        return condition


EVERY_CUSTOMER = CustomerRange()


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


def reconcile(
    engine: Engine, batch_id: str, control: ControlTotals, *, parts: int | None = None
) -> Reconciliation:
    """Compare the warehouse's figures of ``batch_id`` with intake's ``control`` totals.

    ``parts``: how many scans of the charges run at once (default: :func:`scan_parts`)."""
    if parts is None:
        parts = scan_parts(engine, control.transactions)
    with engine.connect().execution_options(**READS_ONLY) as connection:
        checksum = applied_id_checksum(connection, batch_id)
        ranges = customer_ranges(connection, batch_id, parts)
        if len(ranges) == 1:
            scan = scan_charges(connection, batch_id)
    if len(ranges) > 1:
        with ThreadPoolExecutor(len(ranges), thread_name_prefix="reconcile") as pool:
            scan = join_scans(
                list(pool.map(lambda part: _scan_part(engine, batch_id, part), ranges))
            )
    return Reconciliation(
        batch_id=batch_id,
        control=control,
        warehouse=ControlTotals(
            transactions=scan.transactions, quantity=scan.quantity, id_checksum=checksum
        ),
        invoice_mismatches=scan.invoice_mismatches,
    )


@dataclass(frozen=True)
class ChargeScan:
    """What one pass over a batch's charges finds: its totals and the invoices they contradict."""

    transactions: int
    quantity: int
    invoice_mismatches: list[InvoiceMismatch]


def scan_parts(engine: Engine, transactions: int) -> int:
    """How many scans of a batch of ``transactions`` charges to run at once."""
    if engine.dialect.name == "sqlite" and transactions >= SPLIT_SCAN_FROM:
        return SQLITE_SCAN_PARTS
    return 1


def customer_ranges(connection: Connection, batch_id: str, parts: int) -> list[CustomerRange]:
    """Up to ``parts`` ranges of customer ids, as many invoices in each, that cover every id.

    Split at invoices (one per customer, read through their primary key): a customer with
    charges and no invoice still falls in one of the ranges, which leave no id out.
    """
    if parts < 2:
        return [EVERY_CUSTOMER]
    invoices = connection.scalar(
        select(func.count()).select_from(Invoice).where(Invoice.batch_id == batch_id)
    )
    bounds: list[str] = []
    for part in range(1, parts):
        bound = connection.scalar(
            select(Invoice.customer_id)
            .where(Invoice.batch_id == batch_id)
            .order_by(Invoice.customer_id)
            .offset(int(invoices or 0) * part // parts)
            .limit(1)
        )
        if bound is not None and (not bounds or bound > bounds[-1]):
            bounds.append(bound)
    edges: list[str | None] = [None, *bounds, None]
    return [CustomerRange(first, end) for first, end in pairwise(edges)]


def join_scans(scans: Sequence[ChargeScan], limit: int = MAX_REPORTED_MISMATCHES) -> ChargeScan:
    """One scan's findings from those of disjoint customer ranges."""
    found = sorted(
        (mismatch for scan in scans for mismatch in scan.invoice_mismatches),
        key=lambda mismatch: mismatch.customer_id,
    )
    return ChargeScan(
        transactions=sum(scan.transactions for scan in scans),
        quantity=sum(scan.quantity for scan in scans),
        invoice_mismatches=found[:limit],
    )


def _scan_part(engine: Engine, batch_id: str, customers: CustomerRange) -> ChargeScan:
    with engine.connect().execution_options(**READS_ONLY) as connection:
        return scan_charges(connection, batch_id, customers=customers)


def scan_charges(
    connection: Connection,
    batch_id: str,
    limit: int = MAX_REPORTED_MISMATCHES,
    *,
    customers: CustomerRange = EVERY_CUSTOMER,
) -> ChargeScan:
    """Count, quantity sum and invoice mismatches of the batch, in one SQL statement.

    The batch's charges are summed per customer once (``GROUP BY customer_id``: the database
    finds the batch's rows through the unique ``(batch_id, transaction_id)`` key and sorts
    them, once per batch, rather than every insert keeping a customer index in order,
    migration 0003); that small result is materialised and read twice: summed again into the
    batch's count and quantity, and, negated, stacked (``UNION ALL``) with the invoices, so
    that per customer a correct invoice sums to zero in every figure. A customer with
    charges but no invoice, or an invoice with no charges, shows up too. Portable (no FULL
    OUTER JOIN, no ROLLUP); the totals come back as the one row whose ``customer_id`` is
    null (customer ids never are). ``customers``: only those customers' charges and invoices.
    """
    per_customer = (
        select(
            Charge.customer_id,
            func.count().label("lines"),
            *(func.sum(Charge.__table__.c[name]).label(name) for name in INVOICE_SUMS[1:]),
        )
        .where(Charge.batch_id == batch_id, customers.holds(Charge.customer_id))
        .group_by(Charge.customer_id)
        .cte("charges_per_customer")
        .prefix_with("MATERIALIZED")  # read twice below: summed once, not twice
    )
    invoice_rows = select(
        Invoice.customer_id, *(Invoice.__table__.c[name] for name in INVOICE_SUMS)
    ).where(Invoice.batch_id == batch_id, customers.holds(Invoice.customer_id))
    negated_charges = select(
        per_customer.c.customer_id, *(-per_customer.c[name] for name in INVOICE_SUMS)
    )
    stacked = union_all(invoice_rows, negated_charges).subquery()
    sums = [func.sum(stacked.c[name]) for name in INVOICE_SUMS]
    mismatches = (
        select(stacked.c.customer_id, *sums)
        .group_by(stacked.c.customer_id)
        .having(or_(*(total != 0 for total in sums)))
        .order_by(stacked.c.customer_id)
        .limit(limit)
        .subquery()
    )
    zeros = [literal(0, BigInteger) for _ in INVOICE_SUMS[2:]]
    totals = select(
        null().label("customer_id"),
        func.coalesce(func.sum(per_customer.c.lines), 0),
        func.coalesce(func.sum(per_customer.c.quantity), 0),
        *zeros,
    )
    transactions, quantity, found = 0, 0, []
    for customer_id, *figures in connection.execute(union_all(totals, select(mismatches))):
        if customer_id is None:
            transactions, quantity = int(figures[0]), int(figures[1])
            continue
        differences = {
            name: int(value) for name, value in zip(INVOICE_SUMS, figures, strict=True) if value
        }
        found.append(InvoiceMismatch(customer_id=customer_id, differences=differences))
    found.sort(key=lambda mismatch: mismatch.customer_id)
    return ChargeScan(transactions, quantity, found)


def applied_id_checksum(connection: Connection, batch_id: str) -> int:
    """The sum modulo 2**64 of the partial id checksums on the batch's applied marks."""
    high_sum, low_sum = connection.execute(
        select(
            func.coalesce(func.sum(AppliedChunk.id_checksum_high), 0),
            func.coalesce(func.sum(AppliedChunk.id_checksum_low), 0),
        ).where(AppliedChunk.batch_id == batch_id)
    ).one()
    return join_sums(int(high_sum), int(low_sum))
