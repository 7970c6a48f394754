"""Transactions and control totals: the id hash, and totals that ignore order."""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from shared.domain.transactions import (
    ControlTotals,
    ControlTotalsBuilder,
    Transaction,
    id_checksum_of,
    transaction_id_hash,
)

SEED = 20240601


def expected_hash(tid: str) -> int:
    """The documented rule, written out independently: blake2b, 8-byte digest, big-endian."""
    digest = hashlib.blake2b(tid.encode("utf-8"), digest_size=8).digest()
    return sum(byte << (8 * (7 - i)) for i, byte in enumerate(digest))


def totals_of(lines: list[tuple[str, int]]) -> ControlTotals:
    builder = ControlTotalsBuilder()
    for tid, quantity in lines:
        builder.add(tid, quantity)
    return builder.build()


def sample_lines(count: int) -> list[tuple[str, int]]:
    rng = random.Random(SEED)
    return [(f"TX-{i:06d}", rng.randint(1, 1_000_000)) for i in range(count)]


def test_transaction_is_a_slotted_value() -> None:
    when = datetime(2024, 6, 1, tzinfo=UTC)
    txn = Transaction("T-1", "C-1", "SEAT", 3, "EU", when)

    assert not hasattr(txn, "__dict__")
    assert txn == Transaction("T-1", "C-1", "SEAT", 3, "EU", when)
    assert txn != Transaction("T-1", "C-1", "SEAT", 4, "EU", when)
    with pytest.raises(AttributeError):
        txn.note = "no room for fields that are not declared"  # type: ignore[attr-defined]


@pytest.mark.parametrize("tid", ["T-1", "a", "order:2024-06-01.000123", "x" * 64])
def test_id_hash_is_blake2b_64_big_endian(tid: str) -> None:
    value = transaction_id_hash(tid)
    assert value == expected_hash(tid)
    assert 0 <= value < 2**64


def test_id_hash_differs_for_nearby_ids() -> None:
    hashes = {transaction_id_hash(f"T-{i}") for i in range(1000)}
    assert len(hashes) == 1000


@pytest.mark.parametrize("count", [0, 1, 50, 2000])
def test_id_checksum_of_many_ids_is_the_wrapped_sum_of_their_hashes(count: int) -> None:
    ids = [tid for tid, _ in sample_lines(count)] + (["ünïcode-id"] if count else [])
    assert id_checksum_of(ids) == sum(expected_hash(tid) for tid in ids) % 2**64


def test_adding_a_chunk_at_once_gives_the_totals_of_adding_one_by_one() -> None:
    lines = sample_lines(1000)
    when = datetime(2024, 6, 1, tzinfo=UTC)
    transactions = [Transaction(tid, "C-1", "SEAT", qty, "EU", when) for tid, qty in lines]
    builder = ControlTotalsBuilder()
    builder.add_all(transactions[:400])
    builder.add(*lines[400])
    builder.add_all(transactions[401:])
    builder.add_all([])

    assert builder.build() == totals_of(lines)


def test_totals_count_sum_and_checksum() -> None:
    lines = sample_lines(500)
    totals = totals_of(lines)

    assert totals.transactions == 500
    assert totals.quantity == sum(quantity for _, quantity in lines)
    assert totals.id_checksum == sum(expected_hash(tid) for tid, _ in lines) % 2**64


def test_checksum_wraps_modulo_2_to_the_64() -> None:
    lines = sample_lines(50)
    unwrapped = sum(expected_hash(tid) for tid, _ in lines)
    assert unwrapped >= 2**64  # 50 hashes of ~2**63 each overflow a 64-bit word

    assert totals_of(lines).id_checksum == unwrapped - (unwrapped // 2**64) * 2**64


def test_totals_are_independent_of_order() -> None:
    lines = sample_lines(1000)
    in_file_order = totals_of(lines)
    rng = random.Random(SEED)

    for _ in range(5):
        shuffled = lines[:]
        rng.shuffle(shuffled)
        assert shuffled != lines
        assert totals_of(shuffled) == in_file_order


def test_totals_of_chunks_combine_to_the_whole_in_any_order() -> None:
    lines = sample_lines(1000)
    chunks = [totals_of(lines[start : start + 128]) for start in range(0, 1000, 128)]
    random.Random(SEED).shuffle(chunks)

    combined = ControlTotals(transactions=0, quantity=0, id_checksum=0)
    for chunk in chunks:
        combined = combined.combine(chunk)

    assert combined == totals_of(lines)


def test_a_lost_duplicated_or_substituted_id_changes_the_checksum() -> None:
    lines = sample_lines(100)
    whole = totals_of(lines)

    assert totals_of(lines[:-1]).id_checksum != whole.id_checksum
    assert totals_of([*lines, lines[0]]).id_checksum != whole.id_checksum
    substituted = [("TX-SWAPPED", lines[0][1]), *lines[1:]]
    swapped = totals_of(substituted)
    assert (swapped.transactions, swapped.quantity) == (whole.transactions, whole.quantity)
    assert swapped.id_checksum != whole.id_checksum


def test_control_totals_are_frozen_and_bounded() -> None:
    totals = ControlTotals(transactions=1, quantity=2, id_checksum=3)
    with pytest.raises(ValidationError):
        totals.quantity = 5
    with pytest.raises(ValidationError):
        ControlTotals(transactions=-1, quantity=0, id_checksum=0)
    with pytest.raises(ValidationError):
        ControlTotals(transactions=0, quantity=0, id_checksum=2**64)


def test_an_empty_builder_gives_zero_totals() -> None:
    assert ControlTotalsBuilder().build() == ControlTotals(
        transactions=0, quantity=0, id_checksum=0
    )
