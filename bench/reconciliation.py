"""Closing a batch: the reconciliation per row (as it was) against per batch (as it is now).

    python -m bench.reconciliation [--quick] [--transactions N] [--postgres URL]

A generated batch is rated (the integer rater) and applied chunk by chunk through the
production reducer (:func:`controller.reducer.apply_rows`) into a fresh warehouse. Then, on
that warehouse, in alternating rounds:

* **per row**, the close as it was (kept here as the reference): count and quantity in one
  query, every transaction id read back (``YIELD_PER`` at a time) and hashed in Python,
  and the invoice check as a ``GROUP BY`` over the invoices and every negated charge row;
* **per batch**, :func:`controller.reconciliation.reconcile`: one pass over the charges
  summed per customer gives count, quantity and the invoice check (on SQLite, for a large
  batch, in two parts at once, split by customer; also timed in one scan); the applied
  marks' partial id checksums are summed in SQL;

and each part alone. Both must find the control totals. Also timed: what moved to the
apply, hashing each chunk's ids once as the reducer now does (``id_checksum_of``).

Printed: this process's CPU per transaction (on SQLite the database runs in it, so that is
all of it; on PostgreSQL the server's share is in its own process, hence wall time too),
best of the rounds, and the ratio of the two closes. PostgreSQL runs when ``--postgres`` or
``BILLING_TEST_POSTGRES_URL`` names a server whose role may create databases.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from itertools import count
from operator import itemgetter
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Connection, Engine, func, insert, literal, or_, select, union_all

from bench.charge_load import postgres_database, rated_results
from bench.report import Cell, Report, base_parser
from controller.reconciliation import applied_id_checksum, reconcile, scan_charges
from controller.reducer import apply_rows
from shared.contracts.chunk_result import COLUMNS, ResultRow
from shared.domain.charges import INVOICE_SUMS
from shared.domain.transactions import (
    ID_CHECKSUM_MODULUS,
    ControlTotals,
    ControlTotalsBuilder,
    id_checksum_of,
)
from shared.settings import Settings
from shared.warehouse import Batch, Charge, Invoice, make_engine, upgrade

BATCH_ID = "reconciliation"
#: Ids fetched per round trip by the per-row checksum (what the close used).
YIELD_PER = 10_000
_id = itemgetter(COLUMNS.index("transaction_id"))
_quantity = itemgetter(COLUMNS.index("quantity"))
Results = list[tuple[list[ResultRow], dict[str, list[int]]]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("closing a batch: reconciliation per row vs per batch")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--postgres", default=os.environ.get("BILLING_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    transactions: int = args.transactions or (4_000 if args.quick else 200_000)
    rounds = 1 if args.quick else 3
    chunk_size = Settings.model_fields["chunk_size"].default
    report = Report(benchmark="reconciliation", quick=args.quick)

    print(f"  rating {transactions:,} transactions", file=sys.stderr)
    results = rated_results(transactions, chunk_size)
    control = _control_totals(results)
    rows: list[list[Cell]] = [_apply_side_hashing(results, transactions, rounds)]
    with tempfile.TemporaryDirectory(prefix="bench-reconciliation-") as folder:
        url = f"sqlite:///{Path(folder) / 'warehouse.sqlite3'}"
        rows += _measure(report, "sqlite", url, results, control, rounds)
    if args.postgres:
        with postgres_database(args.postgres, prefix="bench_reconciliation") as url:
            rows += _measure(report, "postgresql", url, results, control, rounds)
    else:
        report.conclude("PostgreSQL skipped: give --postgres URL or BILLING_TEST_POSTGRES_URL")
    report.table(
        f"closing a batch of {transactions:,} transactions ({len(results)} chunks); "
        f"best of {rounds}",
        ["warehouse", "step", "CPU µs per tx", "wall µs per tx"],
        rows,
    )
    report.emit(args.json)
    return 0


def _measure(
    report: Report, name: str, url: str, results: Results, control: ControlTotals, rounds: int
) -> list[list[Cell]]:
    print(f"  {name}: applying, then closing", file=sys.stderr)
    upgrade(url)
    engine = make_engine(url)
    try:
        _apply(engine, results, control)
        per_row = _per_row_close(engine, control)
        per_batch = _per_batch_close(engine, control)
        steps: dict[str, Callable[[], object]] = {
            "close per row (before)": per_row,
            "  count and quantity": _on(engine, _charge_totals),
            "  ids read back and hashed": _on(engine, _rehashed_id_checksum),
            "  invoices vs every charge row": _on(engine, _row_by_row_invoice_check),
            "close per batch (now)": per_batch,
            "  the same in one scan, not in parts": _per_batch_close(engine, control, parts=1),
            "  one pass: count, quantity, invoices": _on(engine, scan_charges),
            "  partial checksums summed": _on(engine, applied_id_checksum),
        }
        best = _best_of(steps, rounds)
    finally:
        engine.dispose()
    transactions = control.transactions
    cpu = {step: seconds * 1e6 / transactions for step, (seconds, _) in best.items()}
    ratio = cpu["close per row (before)"] / cpu["close per batch (now)"]
    report.figure(f"{name}.per_row.cpu_us_per_tx", cpu["close per row (before)"])
    report.figure(f"{name}.per_batch.cpu_us_per_tx", cpu["close per batch (now)"])
    report.figure(f"{name}.per_row_over_per_batch", ratio)
    one_scan = best["  the same in one scan, not in parts"][1] / best["close per batch (now)"][1]
    report.figure(f"{name}.one_scan_over_parts.wall", one_scan)
    report.conclude(
        f"{name}: the close costs {cpu['close per batch (now)']:.2f} µs of CPU per "
        f"transaction, {ratio:.1f}x less than per row ({cpu['close per row (before)']:.2f})"
    )
    return [[name, step, cpu[step], wall * 1e6 / transactions] for step, (_, wall) in best.items()]


def _best_of(steps: dict[str, Callable[[], object]], rounds: int) -> dict[str, tuple[float, float]]:
    """Per step, the least CPU and wall seconds over ``rounds`` alternating rounds."""
    best = dict.fromkeys(steps, (float("inf"), float("inf")))
    for _ in range(rounds):
        for step, run in steps.items():
            cpu, wall = time.process_time(), time.perf_counter()
            run()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[step] = (min(best[step][0], cpu), min(best[step][1], wall))
    return best


def _apply_side_hashing(results: Results, transactions: int, rounds: int) -> list[Cell]:
    """What the reducer now pays per chunk instead: one blake2b per id it loads."""
    chunks = [[_id(row) for row in rows] for rows, _ in results]
    best = _best_of({"hash": lambda: [id_checksum_of(ids) for ids in chunks]}, rounds)["hash"]
    return ["(apply)", "partial checksum per chunk", *(s * 1e6 / transactions for s in best)]


def _per_row_close(engine: Engine, control: ControlTotals) -> Callable[[], None]:
    def close() -> None:
        with engine.connect() as connection:
            transactions, quantity = _charge_totals(connection, BATCH_ID)
            totals = ControlTotals(
                transactions=transactions,
                quantity=quantity,
                id_checksum=_rehashed_id_checksum(connection, BATCH_ID),
            )
            mismatches = _row_by_row_invoice_check(connection, BATCH_ID)
        assert totals == control, f"the per-row close found {totals}, not {control}"
        assert not mismatches, f"the per-row close found {mismatches}"

    return close


def _per_batch_close(
    engine: Engine, control: ControlTotals, parts: int | None = None
) -> Callable[[], None]:
    def close() -> None:
        outcome = reconcile(engine, BATCH_ID, control, parts=parts)
        assert outcome.reconciled, outcome.describe()

    return close


def _on(engine: Engine, step: Callable[[Connection, str], object]) -> Callable[[], object]:
    def run() -> object:
        with engine.connect() as connection:
            return step(connection, BATCH_ID)

    return run


def _charge_totals(connection: Connection, batch_id: str) -> tuple[int, int]:
    transactions, quantity = connection.execute(
        select(func.count(), func.coalesce(func.sum(Charge.quantity), 0)).where(
            Charge.batch_id == batch_id
        )
    ).one()
    return int(transactions), int(quantity)


def _row_by_row_invoice_check(connection: Connection, batch_id: str) -> list[Any]:
    """Invoices and every negated charge row stacked, then grouped per customer."""
    invoice_rows = select(
        Invoice.customer_id, *(Invoice.__table__.c[name] for name in INVOICE_SUMS)
    ).where(Invoice.batch_id == batch_id)
    negated_charges = select(
        Charge.customer_id,
        literal(-1, BigInteger).label("lines"),
        *((-Charge.__table__.c[name]).label(name) for name in INVOICE_SUMS[1:]),
    ).where(Charge.batch_id == batch_id)
    stacked = union_all(invoice_rows, negated_charges).subquery()
    sums = [func.sum(stacked.c[name]) for name in INVOICE_SUMS]
    query = (
        select(stacked.c.customer_id, *sums)
        .group_by(stacked.c.customer_id)
        .having(or_(*(total != 0 for total in sums)))
        .order_by(stacked.c.customer_id)
        .limit(100)
    )
    return list(connection.execute(query))


def _rehashed_id_checksum(connection: Connection, batch_id: str) -> int:
    ids = connection.execute(
        select(Charge.transaction_id).where(Charge.batch_id == batch_id),
        execution_options={"yield_per": YIELD_PER},
    )
    checksum = 0
    for partition in ids.scalars().partitions():
        checksum = (checksum + id_checksum_of(partition)) % ID_CHECKSUM_MODULUS
    return checksum


def _control_totals(results: Results) -> ControlTotals:
    builder = ControlTotalsBuilder()
    for rows, _ in results:
        for row in rows:
            builder.add(_id(row), _quantity(row))
    return builder.build()


class _Counter:
    def __init__(self) -> None:
        self._next = count(1)

    def take(self, how_many: int) -> list[int]:
        return [next(self._next) for _ in range(how_many)]


def _apply(engine: Engine, results: Results, control: ControlTotals) -> None:
    with engine.begin() as connection:
        connection.execute(
            insert(Batch).values(
                batch_id=BATCH_ID,
                priority="normal",
                transactions=control.transactions,
                chunks=len(results),
                pricebook_version="v",
                status="processing",
                accepted_at=datetime.now(UTC),
                control_transactions=control.transactions,
                control_quantity=control.quantity,
                control_id_checksum=control.id_checksum,
            )
        )
    ids = _Counter()
    for chunk, (rows, subtotals) in enumerate(results):
        apply_rows(
            engine,
            batch_id=BATCH_ID,
            chunk=chunk,
            rows=rows,
            subtotals=subtotals,
            currency="USD",
            allocator=ids,
            processor="bench",
        )


if __name__ == "__main__":
    raise SystemExit(main())
