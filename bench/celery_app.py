"""The Celery side of :mod:`bench.celery_reference`: the app and its one task.

What a Python user would set up instead of this project: Celery 5 on kombu's
``azurestoragequeues`` transport, a chunk of CSV rows as the task's argument, and a task
that rates the rows and stores them with one ``executemany`` in one SQLite transaction.
The task uses the project's own integer rater and bulk loader into the production schema
(the same 16 columns, the same two unique keys), so the comparison is between the ways of
distributing the work, not between two raters or two schemas.

Configured from the environment, because Celery's worker imports this module itself
(``celery -A bench.celery_app worker``): :data:`BROKER_ENV` is the broker URL,
:data:`WAREHOUSE_ENV` the SQLite file (already migrated, holding the batch row).
"""

from __future__ import annotations

import os
from functools import cache

from celery import Celery
from sqlalchemy import Engine

from bench.bare_pipeline import BATCH_ID
from controller.charge_loader import load_charges
from processor.integer_rater import IntegerRater
from shared.domain.pricebook import sample_pricebook
from shared.warehouse import make_engine

BROKER_ENV = "BENCH_CELERY_BROKER"
WAREHOUSE_ENV = "BENCH_CELERY_WAREHOUSE"
QUEUE = "bench-celery"

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
    book = sample_pricebook()
    return IntegerRater(book), book.currency


@cache
def _engine() -> Engine:
    return make_engine(f"sqlite:///{os.environ[WAREHOUSE_ENV]}")


@app.task(name="bench.load_chunk")  # type: ignore[untyped-decorator]
def load_chunk(chunk: int, first_order_id: int, rows: list[list[str]]) -> int:
    """Rate ``rows`` (CSV fields of the batch file) and insert them as one transaction."""
    rater, currency = _pricing()
    rated, _ = rater.rate_rows(
        [line, tx_id, customer, sku, int(quantity), region, at]
        for line, (tx_id, customer, sku, quantity, region, at) in enumerate(rows)
    )
    with _engine().begin() as connection:
        load_charges(
            connection,
            [
                (first_order_id + index, BATCH_ID, chunk, currency, *row[1:])
                for index, row in enumerate(rated)
            ],
        )
    return len(rated)
