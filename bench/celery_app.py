"""The Celery side of :mod:`bench.celery_reference`: the app and its one task.

What a Python user would set up instead of this project: Celery 5 on kombu's
``azurestoragequeues`` transport, a chunk of CSV rows as the task's argument, and a task
that rates the rows and stores them with one ``executemany`` in one SQLite transaction.
The task rates with the project's own integer rater, then stores the rows in one of two
tables of the same 16 columns and the same two unique keys (``order_id``;
``batch_id, transaction_id``):

* ``production``: the warehouse's ``charges`` through the project's bulk loader, which also
  keeps the ``(batch_id, customer_id)`` index and converts each timestamp in SQL: the same
  insert the project's controller does, so the comparison is between the ways of
  distributing the work;
* ``plain``: :data:`PLAIN_TABLE`, a bare ``executemany`` of the tuples and nothing else, the
  simplest setup a Celery user writes.

Configured from the environment, because Celery's worker imports this module itself
(``celery -A bench.celery_app worker``): :data:`BROKER_ENV` is the broker URL,
:data:`WAREHOUSE_ENV` the SQLite file (already migrated, holding the batch row),
:data:`PRICEBOOK_ENV` the pricebook JSON to rate with (unset: the sample pricebook).
"""

from __future__ import annotations

import os
import sqlite3
from functools import cache
from pathlib import Path

from celery import Celery
from sqlalchemy import Engine

from bench.bare_pipeline import BATCH_ID
from controller.charge_loader import COLUMNS, load_charges
from processor.integer_rater import IntegerRater
from shared.domain.pricebook import load_pricebook, sample_pricebook
from shared.warehouse import make_engine

BROKER_ENV = "BENCH_CELERY_BROKER"
WAREHOUSE_ENV = "BENCH_CELERY_WAREHOUSE"
PRICEBOOK_ENV = "BENCH_CELERY_PRICEBOOK"
QUEUE = "bench-celery"
TABLES = ("production", "plain")
PLAIN_TABLE = "plain_charges"
TEXT_COLUMNS = frozenset(
    {"batch_id", "currency", "occurred_at", "transaction_id", "customer_id", "sku", "region"}
)
_PLAIN_INSERT = f"INSERT INTO {PLAIN_TABLE} ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * 16)})"


def create_plain_table(connection: sqlite3.Connection) -> None:
    """The plain table: the charges' 16 columns and their two unique keys, no other index."""
    columns = ", ".join(
        f"{name} {'TEXT' if name in TEXT_COLUMNS else 'INTEGER'}" for name in COLUMNS
    )
    connection.execute(
        f"CREATE TABLE {PLAIN_TABLE} ({columns}, PRIMARY KEY (order_id), "
        "UNIQUE (batch_id, transaction_id))"
    )


app = Celery("bench_celery", broker=os.environ.get(BROKER_ENV, "memory://"))
app.conf.update(
    task_default_queue=QUEUE,
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,  # no result backend: the warehouse is the result
    # The rows of a chunk do not fit an Azure queue message's 64 KiB as base64 JSON.
    task_compression="zlib",
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@cache
def _pricing() -> tuple[IntegerRater, str]:
    path = os.environ.get(PRICEBOOK_ENV)
    book = load_pricebook(Path(path).read_bytes()) if path else sample_pricebook()
    return IntegerRater(book), book.currency


@cache
def _engine() -> Engine:
    return make_engine(f"sqlite:///{os.environ[WAREHOUSE_ENV]}")


@cache
def _plain_connection() -> sqlite3.Connection:
    connection = sqlite3.connect(os.environ[WAREHOUSE_ENV], isolation_level=None, timeout=60)
    # The warehouse engine's pragmas, so that only the table differs.
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    return connection


@app.task(name="bench.load_chunk")  # type: ignore[untyped-decorator]
def load_chunk(table: str, chunk: int, first_order_id: int, rows: list[list[str]]) -> int:
    """Rate ``rows`` (CSV fields of the batch file) and insert them as one transaction."""
    rater, currency = _pricing()
    rated, _ = rater.rate_rows(
        [line, tx_id, customer, sku, int(quantity), region, at]
        for line, (tx_id, customer, sku, quantity, region, at) in enumerate(rows)
    )
    charges = [
        (first_order_id + index, BATCH_ID, chunk, currency, *row) for index, row in enumerate(rated)
    ]
    if table == "plain":
        plain = _plain_connection()
        plain.execute("BEGIN IMMEDIATE")
        plain.executemany(_PLAIN_INSERT, charges)
        plain.execute("COMMIT")
    else:
        with _engine().begin() as connection:
            load_charges(connection, charges)
    return len(charges)
