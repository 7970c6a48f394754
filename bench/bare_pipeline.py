"""The bare single-process pipeline: parse + rate + insert in one loop, no queues, no blobs.

The yardstick of the end-to-end figure: what one process does with the same batch
file when nothing is distributed. It calls the production functions directly — the
streaming validating parser (:func:`initiator.intake.parse_batch`, duplicates and control
totals included), the processors' rater
(:meth:`processor.integer_rater.IntegerRater.rate_rows`) and the reducer
(:func:`controller.reducer.apply_rows`: one database transaction per chunk, chunks growing
as the initiator cuts them) into a fresh SQLite warehouse — and skips only what
distribution adds: payload and result blobs, queues, the trigger, the blob-backed order-id
allocator (ids come from a counter in memory).

:func:`run_lean_loop` is the other yardstick: the same charges stored by the leanest loop
(gunzip if compressed, ``csv.reader`` or ``json.loads`` per line, the integer rater, the bulk
loader), what the file costs Python at all; on the demo's batch or any shape's.
"""

from __future__ import annotations

import csv
import gzip as gzip_module
import io
import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, insert, update

from bench.shapes import FileFormat
from controller.charge_loader import load_charges
from controller.reducer import apply_rows
from initiator.acceptance import growing_chunks
from initiator.intake import parse_batch
from processor.integer_rater import IntegerRater
from shared.contracts.chunk_payload import NumberedTransaction, PayloadRow, payload_rows
from shared.domain.pricebook import Pricebook, sample_pricebook
from shared.domain.transactions import ControlTotalsBuilder
from shared.warehouse import Batch, make_engine, upgrade

BATCH_ID = "bare-pipeline"


@dataclass(frozen=True)
class BareTimings:
    """Seconds spent in each stage of the loop, and in all of it."""

    transactions: int
    parse: float
    rate: float
    insert: float
    total: float

    @property
    def throughput(self) -> float:
        return self.transactions / self.total


class MemoryIds:
    """Order ids from a counter in memory (the bare loop has no blob allocator)."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def take(self, count: int) -> list[int]:
        return [next(self._next) for _ in range(count)]


def run_bare_pipeline(
    data: bytes, warehouse: Path, *, chunk_size: int, max_chunk_size: int
) -> BareTimings:
    """Parse, rate and insert the CSV batch ``data`` into a new SQLite file ``warehouse``,
    in chunks as the initiator cuts them (``chunk_size`` doubling up to ``max_chunk_size``)."""
    url = f"sqlite:///{warehouse}"
    upgrade(url)
    engine = make_engine(url)
    try:
        return _run(data, engine, chunk_size, max_chunk_size)
    finally:
        engine.dispose()


def _run(data: bytes, engine: Engine, chunk_size: int, max_chunk_size: int) -> BareTimings:
    book = sample_pricebook()
    rater = IntegerRater(book)
    ids = MemoryIds()
    totals = ControlTotalsBuilder()
    insert_batch_row(engine, book.version_hash())
    parse_s = rate_s = insert_s = 0.0
    count = 0
    started = time.perf_counter()
    reader = parse_batch([data], content_type="text/csv", content_encoding=None, pricebook=book)
    with reader:
        chunks = growing_chunks(reader, chunk_size, max_chunk_size)
        for chunk in itertools.count():
            t0 = time.perf_counter()
            rows: list[NumberedTransaction] | None = next(chunks, None)
            if rows is None:
                parse_s += time.perf_counter() - t0
                break
            for _, tx in rows:
                totals.add(tx.transaction_id, tx.quantity)
            t1 = time.perf_counter()
            # The payload's rows, as a processor decodes them from the blob.
            rated, sums = rater.rate_rows(payload_rows(rows))
            t2 = time.perf_counter()
            apply_rows(
                engine,
                batch_id=BATCH_ID,
                chunk=chunk,
                rows=rated,
                invoice_sums=sums,
                currency=book.currency,
                allocator=ids,
                processor="bare",
            )
            t3 = time.perf_counter()
            parse_s, rate_s, insert_s = parse_s + t1 - t0, rate_s + t2 - t1, insert_s + t3 - t2
            count += len(rows)
    if reader.rejection() is not None:
        raise RuntimeError(f"the benchmark's batch was rejected: {reader.rejection()}")
    _close_batch(engine, totals)
    return BareTimings(count, parse_s, rate_s, insert_s, time.perf_counter() - started)


def insert_batch_row(engine: Engine, pricebook_version: str, batch_id: str = BATCH_ID) -> None:
    """The ``batches`` row the charges refer to (its control totals are set at the end)."""
    with engine.begin() as connection:
        connection.execute(
            insert(Batch).values(
                batch_id=batch_id,
                priority="normal",
                transactions=0,
                chunks=0,
                pricebook_version=pricebook_version,
                status="processing",
                accepted_at=datetime.now(UTC),
                control_transactions=0,
                control_quantity=0,
                control_id_checksum=0,
            )
        )


def _close_batch(engine: Engine, totals: ControlTotalsBuilder) -> None:
    built = totals.build()
    with engine.begin() as connection:
        connection.execute(
            update(Batch)
            .where(Batch.batch_id == BATCH_ID)
            .values(
                status="completed",
                transactions=built.transactions,
                control_transactions=built.transactions,
                control_quantity=built.quantity,
                control_id_checksum=built.id_checksum,
                completed_at=datetime.now(UTC),
            )
        )


def run_lean_loop(
    data: bytes,
    warehouse: Path,
    *,
    pricebook: Pricebook | None = None,
    file_format: FileFormat = "csv",
    gzip: bool = False,
    rows_per_transaction: int = 2000,
) -> float:
    """Seconds for the leanest loop that stores the same charges: the plainest reading of
    the file, the integer rater, the bulk loader, one SQLite transaction per
    ``rows_per_transaction`` rows. ``pricebook`` rates (default: the sample pricebook);
    ``file_format`` and ``gzip`` say how ``data`` is written, as a :class:`bench.shapes.Shape`
    says it.

    The yardstick of what Python does with this file at all: gunzip when it is compressed,
    then ``csv.reader`` (CSV) or one ``json.loads`` per line (JSON Lines), no validation, no
    duplicate check, no control totals, no invoices. The warehouse has the production schema
    (the same two unique keys and indexes), so the insert costs what the pipeline's does.
    """
    url = f"sqlite:///{warehouse}"
    upgrade(url)
    engine = make_engine(url)
    try:
        book = pricebook or sample_pricebook()
        insert_batch_row(engine, book.version_hash())
        rater, currency = IntegerRater(book), book.currency
        started = time.perf_counter()
        rows = _lean_rows(gzip_module.decompress(data) if gzip else data, file_format)
        order_id = itertools.count(1)
        for chunk in itertools.count():
            lines = list(itertools.islice(rows, rows_per_transaction))
            if not lines:
                break
            rated, _ = rater.rate_rows(lines)
            with engine.begin() as connection:
                load_charges(
                    connection,
                    [(next(order_id), BATCH_ID, chunk, currency, *row) for row in rated],
                )
        return time.perf_counter() - started
    finally:
        engine.dispose()


def _lean_rows(body: bytes, file_format: FileFormat) -> Iterator[PayloadRow]:
    """The payload rows of an uncompressed batch file, read the plainest way."""
    lines = io.TextIOWrapper(io.BytesIO(body), encoding="utf-8", newline="")
    if file_format == "csv":
        reader = csv.reader(lines)
        next(reader)  # the header
        for line, (tx_id, customer, sku, quantity, region, at) in enumerate(reader):
            yield line, tx_id, customer, sku, int(quantity), region, at
        return
    for line, text in enumerate(lines):
        record = json.loads(text)
        yield (
            line,
            record["transaction_id"],
            record["customer_id"],
            record["sku"],
            record["quantity"],
            record["region"],
            record["occurred_at"],
        )
