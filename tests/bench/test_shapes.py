"""The benchmark shapes' generator writes batches the initiator's own validator accepts.

Every spelling and format goes through :func:`initiator.intake.reader.parse_batch` with the
generated pricebook (loaded by the project's pricebook loader), on a few hundred rows; the
Celery producer's reading of the same bytes must yield the same transactions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bench.shapes import MATRIX, SPELLINGS, Shape, batch_body, batch_rows, pricebook_document
from initiator.intake.reader import parse_batch
from shared.domain.pricebook import load_pricebook

ROWS = 300


def _parsed(shape: Shape) -> list[tuple[str, str, str, int, str, str]]:
    book = load_pricebook(pricebook_document(shape))
    reader = parse_batch(
        [batch_body(shape)],
        content_type=shape.content_type,
        content_encoding=shape.content_encoding,
        pricebook=book,
    )
    parsed = [
        (t.transaction_id, t.customer_id, t.sku, t.quantity, t.region, t.occurred_at.isoformat())
        for _, t in reader
    ]
    assert reader.rejection() is None, reader.rejection()
    return parsed


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_every_matrix_shape_validates_and_celery_reads_the_same_rows(name: str) -> None:
    shape = MATRIX[name].resized(ROWS)
    parsed = _parsed(shape)
    assert len(parsed) == ROWS
    rows = list(batch_rows(shape, batch_body(shape)))
    assert [row[:5] for row in rows] == [[*map(str, each[:5])] for each in parsed]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_each_spelling_is_the_same_instant(spelling: str) -> None:
    base = replace(MATRIX["base"], timestamps="fraction").resized(ROWS)
    shape = replace(base, timestamps=spelling)  # type: ignore[arg-type]
    stamps = [row[5] for row in batch_rows(shape, batch_body(shape))]
    fractions = [row[5] for row in batch_rows(base, batch_body(base))]
    suffix = {"Z": "Z", "+00:00": "+00:00", "+05:30": "+05:30", "fraction": "Z"}[spelling]
    assert all(stamp.endswith(suffix) for stamp in stamps)
    # Whole seconds agree across spellings: the offset changes the spelling, not the instant.
    seconds = [datetime.fromisoformat(s).astimezone(UTC).replace(microsecond=0) for s in stamps]
    whole = [datetime.fromisoformat(s).replace(microsecond=0) for s in fractions]
    assert seconds == whole


def test_same_seed_same_bytes_and_shape_axes_hold() -> None:
    shape = replace(MATRIX["saas"].resized(2_000), customers=400, skus=50, regions=3)
    assert batch_body(shape) == batch_body(shape)
    assert batch_body(shape, seed=8) != batch_body(shape)
    rows = list(batch_rows(shape, batch_body(shape)))
    assert len({row[1] for row in rows}) > 300  # most of the 400 customers appear
    assert {row[4] for row in rows} == {"R1", "R2", "R3"}
    book = load_pricebook(pricebook_document(shape))
    tiered = [code for code in book.skus if book.skus[code].tiers]
    assert len(book.skus) == 50
    assert len(tiered) == 30
    # Both tiers and the undiscounted price are reached on tiered SKUs.
    reached = Counter(
        len([t for t in book.skus[row[2]].tiers if t.min_quantity <= int(row[3])])
        for row in rows
        if book.skus[row[2]].tiers
    )
    assert min(reached[0], reached[1], reached[2]) > 0


def test_resized_scales_customers_but_keeps_the_demo_floor() -> None:
    assert MATRIX["customers-200k"].resized(20_000).customers == 20_000
    assert MATRIX["customers-20k"].resized(20_000).customers == 2_000
    assert MATRIX["base"].resized(20_000).customers == 500
    assert MATRIX["customers-20k"].resized(1_000).customers == 500
