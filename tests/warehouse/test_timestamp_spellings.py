"""Every timestamp spelling the batch file accepts lands as the instant Python reads from it.

The processor hands ``occurred_at`` to the warehouse as UTC text with microseconds, which
the database stores (SQLite) or parses (PostgreSQL, which would round a longer fraction
where Python truncates it, and refuses offsets from 16 hours on). Here a payload with each
kind goes the production way — ``decode_chunk_rows``, the integer rater, ``apply_rows`` —
into SQLite and PostgreSQL, and every charge must read back as ``datetime.fromisoformat``
of the text the batch file had.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, select

from controller.reducer import apply_rows
from processor.integer_rater import IntegerRater
from shared.contracts.blob_compression import compress, decompress
from shared.contracts.chunk_payload import ChunkPayloadError, decode_chunk_rows, encode_chunk
from shared.domain.pricebook import sample_pricebook
from shared.domain.transactions import Transaction
from shared.warehouse import Charge
from tests.warehouse.conftest import add_batch

SPELLINGS = (
    "2026-03-01T08:15:30.123456789+05:30",  # nine digits: Python keeps six, truncated
    "2026-03-01T08:15:30.9999995Z",  # truncated, where rounding would change the second
    "2026-03-01T08:15:30+20:00",  # beyond PostgreSQL's offsets
    "2026-03-01T08:15:30.5-23:59",
    "2026-03-01T08:15:30.25Z",  # an ordinary one, passed through as it is
)


class Counter:
    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def take(self, count: int) -> list[int]:
        return [next(self._ids) for _ in range(count)]


def payload_blob() -> bytes:
    book = sample_pricebook()
    sku, region = sorted(book.skus)[0], sorted(book.regions)[0]
    rows = []
    for n, text in enumerate(SPELLINGS):
        transaction = Transaction(f"T-{n}", "C-1", sku, 1, region, datetime.fromisoformat(text))
        transaction.occurred_at_text = text  # as the batch parser leaves it
        rows.append((n + 2, transaction))
    return encode_chunk("b", 0, rows)


def test_every_spelling_lands_as_the_instant_python_reads(engine: Engine) -> None:
    add_batch(engine, "b")
    payload = decode_chunk_rows(payload_blob())
    rows, sums = IntegerRater(sample_pricebook()).rate_rows(payload.rows)

    applied = apply_rows(
        engine,
        batch_id="b",
        chunk=0,
        rows=rows,
        invoice_sums=sums,
        currency="USD",
        allocator=Counter(),
        processor="test",
    )

    assert applied
    query = select(Charge.transaction_id, Charge.occurred_at).order_by(Charge.order_id)
    with engine.connect() as connection:
        stored = dict(connection.execute(query).all())
    assert stored == {
        f"T-{n}": datetime.fromisoformat(text).astimezone(UTC) for n, text in enumerate(SPELLINGS)
    }


def test_the_payload_keeps_the_files_spelling_and_the_rater_writes_utc_text() -> None:
    payload_rows = decode_chunk_rows(payload_blob()).rows
    rated, _ = IntegerRater(sample_pricebook()).rate_rows(payload_rows)
    assert [row[6] for row in payload_rows] == list(SPELLINGS)
    assert [row[0] for row in rated] == [
        datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        for text in SPELLINGS
    ]


def test_a_row_without_a_timestamp_is_a_payload_error() -> None:
    document = json.loads(decompress(payload_blob()))
    document["rows"][0] = document["rows"][0][:3]
    broken = compress(json.dumps(document).encode())
    with pytest.raises(ChunkPayloadError, match="malformed chunk payload"):
        decode_chunk_rows(broken)
