"""Chunk sizes: doubling from ``chunk_size`` up to ``max_chunk_size``; an explicit size is fixed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from initiator.acceptance import chunks_of, growing_chunks
from shared.settings import DEFAULT_MAX_CHUNK_SIZE, Settings


def sizes(count: int, first: int, largest: int) -> list[int]:
    return [len(chunk) for chunk in growing_chunks(range(count), first, largest)]


def test_chunks_double_up_to_the_largest_and_keep_every_item_in_order() -> None:
    assert sizes(10_000, 2000, 16_000) == [2000, 4000, 4000]
    assert sizes(200_000, 2000, 16_000) == [2000, 4000, 8000, *[16_000] * 11, 10_000]
    assert len(sizes(1_000_000, 2000, 16_000)) == 65
    items = [item for chunk in growing_chunks(range(12_345), 100, 800) for item in chunk]
    assert items == list(range(12_345))
    assert sizes(0, 10, 20) == []


def test_fixed_chunks_are_growing_chunks_that_cannot_grow() -> None:
    assert [len(c) for c in chunks_of(range(25), 10)] == [10, 10, 5]


def test_by_default_chunks_grow_but_an_explicit_chunk_size_stays_fixed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BILLING_CHUNK_SIZE", raising=False)
    monkeypatch.delenv("BILLING_MAX_CHUNK_SIZE", raising=False)
    default = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (default.chunk_size, default.max_chunk_size) == (2000, DEFAULT_MAX_CHUNK_SIZE)
    pinned = Settings(_env_file=None, chunk_size=10)  # type: ignore[call-arg]
    assert (pinned.chunk_size, pinned.max_chunk_size) == (10, 10)
    monkeypatch.setenv("BILLING_CHUNK_SIZE", "500")
    from_env = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (from_env.chunk_size, from_env.max_chunk_size) == (500, 500)
    monkeypatch.setenv("BILLING_MAX_CHUNK_SIZE", "4000")
    both = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (both.chunk_size, both.max_chunk_size) == (500, 4000)


def test_a_largest_chunk_below_the_first_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_chunk_size 50 is below chunk_size 100"):
        Settings(_env_file=None, chunk_size=100, max_chunk_size=50)  # type: ignore[call-arg]
