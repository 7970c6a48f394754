"""Loading charges: the ORM insert of dicts against the bulk loader, SQLite and PostgreSQL.

    python -m bench.charge_load [--quick] [--rows N] [--postgres URL]

The same rated rows (a generated batch, rated by the integer rater) are written into a
fresh warehouse in transactions of one chunk (the default chunk size) each, two ways, in
alternating rounds on the same database:

* **ORM**: the insert a SQLAlchemy user writes first: one dict per charge with an aware ``datetime``
  (parsed from the result's text), one ``insert(Charge)`` executemany per chunk;
* **bulk**: :func:`controller.charge_loader.load_charges`: tuples with the
  timestamp left as text; ``executemany`` on SQLite, ``COPY`` on PostgreSQL.

Both start from the same decoded result rows, so each side includes the work of turning
them into what it inserts. PostgreSQL runs when ``--postgres`` or
``BILLING_TEST_POSTGRES_URL`` names a server whose role may create databases (a throw-away
database is created and dropped). Wall time, best of the rounds; on SQLite that is also the
controller's CPU, on PostgreSQL the server's share runs in its own process.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, create_engine, delete, insert, text
from sqlalchemy.engine import make_url

from bench.bare_pipeline import insert_batch_row
from bench.deployment import batch_file
from bench.report import Cell, Report, base_parser
from controller.charge_loader import load_charges
from initiator.acceptance import chunks_of
from initiator.intake import parse_batch
from processor.integer_rater import IntegerRater
from shared.contracts.chunk_payload import chunk_json
from shared.contracts.chunk_result import ResultRow
from shared.domain.pricebook import sample_pricebook
from shared.settings import Settings
from shared.warehouse import Charge, make_engine, upgrade

BATCH_ID = "charge-load"
ResultRows = list[ResultRow]


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("ORM insert vs bulk loader of charges, SQLite and PostgreSQL")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--postgres", default=os.environ.get("BILLING_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    rows: int = args.rows or (4_000 if args.quick else 100_000)
    rounds = 1 if args.quick else 3
    chunk_size = Settings.model_fields["chunk_size"].default
    report = Report(benchmark="charge_load", quick=args.quick)

    print(f"  rating {rows:,} transactions", file=sys.stderr)
    chunks = rated_chunks(rows, chunk_size)
    table: list[list[Cell]] = []
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder:
        url = f"sqlite:///{Path(folder) / 'warehouse.sqlite3'}"
        table.append(_measure(report, "sqlite", url, chunks, rows, rounds))
    if args.postgres:
        with postgres_database(args.postgres) as url:
            table.append(_measure(report, "postgresql", url, chunks, rows, rounds))
    else:
        report.conclude("PostgreSQL skipped: give --postgres URL or BILLING_TEST_POSTGRES_URL")
    report.table(
        f"{rows:,} charges in transactions of {chunk_size:,}; best of {rounds}",
        ["database", "ORM rows/s", "bulk rows/s", "ORM µs/row", "bulk µs/row", "ORM / bulk"],
        table,
    )
    report.emit(args.json)
    return 0


def _measure(
    report: Report, name: str, url: str, chunks: list[ResultRows], rows: int, rounds: int
) -> list[Cell]:
    print(f"  {name}", file=sys.stderr)
    upgrade(url)
    engine = make_engine(url)
    try:
        insert_batch_row(engine, "v", batch_id=BATCH_ID)
        ids = itertools.count(1)
        runs: dict[str, Callable[[], None]] = {
            "orm": lambda: _orm_load(engine, chunks, ids),
            "bulk": lambda: _bulk_load(engine, chunks, ids),
        }
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(rounds):
            for run_name, run in runs.items():
                _empty(engine)
                started = time.perf_counter()
                run()
                best[run_name] = min(best[run_name], time.perf_counter() - started)
    finally:
        engine.dispose()
    ratio = best["orm"] / best["bulk"]
    report.figure(f"{name}.orm.rows_per_second", rows / best["orm"])
    report.figure(f"{name}.bulk.rows_per_second", rows / best["bulk"])
    report.figure(f"{name}.orm_over_bulk", ratio)
    report.conclude(
        f"{name}: the bulk loader writes {rows / best['bulk']:,.0f} charges/s, "
        f"{ratio:.1f}x the ORM insert ({rows / best['orm']:,.0f}/s)"
    )
    return [
        name,
        rows / best["orm"],
        rows / best["bulk"],
        best["orm"] * 1e6 / rows,
        best["bulk"] * 1e6 / rows,
        ratio,
    ]


def _orm_load(engine: Engine, chunks: list[ResultRows], ids: Iterator[int]) -> None:
    for chunk, rows in enumerate(chunks):
        values = [
            {
                "order_id": next(ids),
                "batch_id": BATCH_ID,
                "chunk": chunk,
                "transaction_id": tid,
                "customer_id": customer,
                "sku": sku,
                "region": region,
                "quantity": quantity,
                "occurred_at": datetime.fromisoformat(at).replace(tzinfo=UTC),
                "currency": "USD",
                "unit_price": unit_price,
                "gross": gross,
                "discount": discount,
                "net": net,
                "tax": tax,
                "total": total,
            }
            for at, tid, customer, sku, region, quantity, *money in rows
            for unit_price, gross, discount, net, tax, total in (money,)
        ]
        with engine.begin() as connection:
            connection.execute(insert(Charge), values)


def _bulk_load(engine: Engine, chunks: list[ResultRows], ids: Iterator[int]) -> None:
    for chunk, rows in enumerate(chunks):
        values = [(next(ids), BATCH_ID, chunk, "USD", *row) for row in rows]
        with engine.begin() as connection:
            load_charges(connection, values)


def rated_chunks(transactions: int, chunk_size: int) -> list[ResultRows]:
    """Result rows of a generated batch: parsed, chunked, encoded as payload rows, rated."""
    return [rows for rows, _ in rated_results(transactions, chunk_size)]


def rated_results(transactions: int, chunk_size: int) -> list[tuple[ResultRows, list[int]]]:
    """:func:`rated_chunks` with each chunk's invoice sums, as a processor sends."""
    book = sample_pricebook()
    rater = IntegerRater(book)
    data = batch_file(transactions)
    reader = parse_batch([data], content_type="text/csv", content_encoding=None, pricebook=book)
    with reader:
        documents = [
            json.loads(chunk_json(BATCH_ID, index, rows))
            for index, rows in enumerate(chunks_of(reader, chunk_size))
        ]
    return [rater.rate_rows(document["rows"]) for document in documents]


def _empty(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(delete(Charge))


@contextmanager
def postgres_database(server_url: str, prefix: str = "bench_charge_load") -> Iterator[str]:
    """A throw-away database on ``server_url`` (created, yielded as a URL, dropped)."""
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    raise SystemExit(main())
