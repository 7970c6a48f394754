"""Small parts of intake publishing: even spreading over partitions, chunking."""

from __future__ import annotations

from collections import Counter

import pytest

from initiator.acceptance import chunks_of
from initiator.publishing.work_items import round_robin
from shared.contracts.messages import WorkItem


def _items(count: int) -> list[WorkItem]:
    return [
        WorkItem(
            batch_id="b",
            chunk=i,
            priority="low",
            payload_blob=f"b/{i:06d}",
            first_line=2,
            last_line=2,
            transactions=1,
            sha256="0",
            pricebook_version="v",
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("chunks", [1, 3, 4, 5, 10, 97])
@pytest.mark.parametrize("start", [0, 1, 3])
def test_round_robin_spreads_evenly_from_any_start(chunks: int, start: int) -> None:
    queues = ["q0", "q1", "q2", "q3"]
    counts = Counter(round_robin(_items(chunks), queues, start))
    assert sum(counts.values()) == chunks
    assert max(counts.values()) - min(counts.get(q, 0) for q in queues) <= 1
    assert round_robin(_items(1), queues, start) == [queues[start]]


def test_chunks_of() -> None:
    assert list(chunks_of(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunks_of([], 3)) == []
