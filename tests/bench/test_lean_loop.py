"""The lean loop reads a shape's file the plain way and stores the charges the pipeline would.

:func:`bench.bare_pipeline.run_lean_loop` is the yardstick the shape matrix holds the
project against, so it must store every row of the shape's file, rated with the shape's own
pricebook, whatever the file's format: the CSV and the gzip-compressed JSON Lines spelling of
the same shape (same seed) give the same charges, and those are the charges the production
reading (the validating parser, then the integer rater) gives.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from bench.bare_pipeline import run_lean_loop
from bench.shapes import MATRIX, Shape, batch_body, pricebook_document
from initiator.intake.reader import parse_batch
from processor.integer_rater import IntegerRater
from shared.contracts.chunk_payload import payload_rows
from shared.domain.charges import CHARGE_FIELDS
from shared.domain.pricebook import load_pricebook

ROWS = 700
#: Rows per SQLite transaction, so that the rows span several transactions.
PER_TRANSACTION = 300
#: 500 SKUs (none in the sample pricebook), 20,000 customers, ``+00:00`` timestamps.
SAAS = MATRIX["saas"].resized(ROWS)


def _stored(shape: Shape, folder: Path) -> list[tuple[object, ...]]:
    """The lean loop's charges for ``shape``, in transaction id order."""
    warehouse = folder / f"{shape.file_format}{shape.suffix}.sqlite3"
    run_lean_loop(
        batch_body(shape),
        warehouse,
        pricebook=load_pricebook(pricebook_document(shape)),
        file_format=shape.file_format,
        gzip=shape.gzip,
        rows_per_transaction=PER_TRANSACTION,
    )
    with sqlite3.connect(warehouse) as connection:
        return connection.execute(
            f"SELECT {', '.join(CHARGE_FIELDS)}, occurred_at, order_id FROM charges "
            "ORDER BY transaction_id"
        ).fetchall()


def _rated_by_the_pipeline(shape: Shape) -> list[tuple[object, ...]]:
    """The charges of ``shape`` as the validating parser and the integer rater give them."""
    book = load_pricebook(pricebook_document(shape))
    reader = parse_batch(
        [batch_body(shape)],
        content_type=shape.content_type,
        content_encoding=shape.content_encoding,
        pricebook=book,
    )
    rated, _ = IntegerRater(book).rate_rows(payload_rows(list(reader)))
    assert reader.rejection() is None, reader.rejection()
    return sorted(tuple(row[1:]) for row in rated)


def test_jsonl_gzip_and_csv_spellings_store_the_same_charges(tmp_path: Path) -> None:
    csv_shape = replace(SAAS, file_format="csv", gzip=False)
    jsonl_gzip = replace(SAAS, file_format="jsonl", gzip=True)
    from_csv = _stored(csv_shape, tmp_path)
    from_jsonl_gzip = _stored(jsonl_gzip, tmp_path)
    assert len(from_csv) == ROWS
    assert len({row[-1] for row in from_csv}) == ROWS  # one order id per charge
    assert from_jsonl_gzip == from_csv
    fields = len(CHARGE_FIELDS)
    assert [row[:fields] for row in from_csv] == _rated_by_the_pipeline(csv_shape)


def test_demo_call_still_rates_csv_with_the_sample_pricebook(tmp_path: Path) -> None:
    """Without a pricebook and a format, the loop reads CSV and rates with the sample
    pricebook, as the demo's batch needs."""
    from bench.deployment import batch_file
    from bench.end_to_end import DEMO_CUSTOMERS, DEMO_SEED

    warehouse = tmp_path / "demo.sqlite3"
    run_lean_loop(batch_file(ROWS, seed=DEMO_SEED, customers=DEMO_CUSTOMERS), warehouse)
    with sqlite3.connect(warehouse) as connection:
        (count,) = connection.execute("SELECT count(*) FROM charges").fetchone()
    assert count == ROWS
