"""What the intake sends a helper with each segment: the pricebook's codes, not the pricebook.

A segment goes to a helper process by pickle, so whatever it carries is paid for twice per
segment. The helpers need only to know which codes exist; a whole pricebook of thousands
of tiered SKUs would cost more than checking the segment's lines.
"""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bench.shapes import Shape, batch_body, pricebook_document
from initiator.intake.fields import KnownCodes
from initiator.segmented_read import read_in_segments
from shared.domain.pricebook import load_pricebook

SHAPE = Shape("many SKUs", transactions=2_000, skus=2_000, tier_share=1.0)


class _PicklingPool(ThreadPoolExecutor):
    """Runs each task after the pickle round trip a process pool makes; keeps the sizes."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.sizes: list[int] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        sent = pickle.dumps((fn, args, kwargs))
        self.sizes.append(len(sent))
        fn, args, kwargs = pickle.loads(sent)
        return super().submit(fn, *args, **kwargs)


class _Helpers:
    processes = 2

    def __init__(self) -> None:
        self.pool_ = _PicklingPool()

    def pool(self) -> _PicklingPool:
        return self.pool_


class _Chunks:
    def __init__(self) -> None:
        self.lines: list[tuple[int, int, int]] = []

    def add_chunk_document(
        self, document: bytes, lines: tuple[int, int, int], transaction_ids: Iterable[str]
    ) -> None:
        self.lines.append(lines)


def test_a_segment_carries_the_codes_not_the_pricebook() -> None:
    pricebook = load_pricebook(pricebook_document(SHAPE))
    helpers, chunks = _Helpers(), _Chunks()
    with helpers.pool_:
        totals = read_in_segments(
            [batch_body(SHAPE)],
            content_type="text/csv",
            content_encoding=None,
            codes=pricebook,
            batch_id="b-1",
            sizes=itertools.repeat(500),
            segment_lines=250,
            sink=chunks,
            helpers=helpers,  # type: ignore[arg-type]
            max_decompressed_bytes=None,
        )
    assert totals is not None
    assert totals.transactions == SHAPE.transactions
    assert len(chunks.lines) == 4
    assert len(helpers.pool_.sizes) == 8
    # The pricebook alone pickles to several times any segment sent.
    assert max(helpers.pool_.sizes) * 4 < len(pickle.dumps(pricebook))


def test_known_codes_answer_as_the_pricebook_does() -> None:
    pricebook = load_pricebook(pricebook_document(SHAPE))
    codes = KnownCodes.of(pricebook)
    for sku in ("SKU-00001", "SKU-02000", "SKU-02001", "sku-00001", ""):
        assert codes.has_sku(sku) is pricebook.has_sku(sku), sku
    for region in ("R1", "R5", "R6", "r1"):
        assert codes.has_region(region) is pricebook.has_region(region), region
    assert codes.skus.keys() == pricebook.skus.keys()
