"""A batch's id checksum rebuilt from its chunks' 32-bit halves, summed as SQL would."""

from __future__ import annotations

import random

import pytest

from shared.domain.transactions import ID_CHECKSUM_MODULUS
from shared.warehouse.id_checksum_halves import join_sums, split

EDGES = [0, 1, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]


def test_summed_halves_give_the_sum_of_the_checksums_modulo_2_to_the_64() -> None:
    draw = random.Random(12)
    for size in (0, 1, 2, 3, 1000):
        checksums = [draw.choice([*EDGES, draw.randrange(2**64)]) for _ in range(size)]
        halves = [split(checksum) for checksum in checksums]

        rebuilt = join_sums(sum(h for h, _ in halves), sum(low for _, low in halves))

        assert rebuilt == sum(checksums) % ID_CHECKSUM_MODULUS
        # Each half fits 32 bits, so a BIGINT sum of billions of them cannot overflow.
        assert all(0 <= part < 2**32 for pair in halves for part in pair)


@pytest.mark.parametrize("checksum", [-1, 2**64])
def test_a_value_outside_64_unsigned_bits_is_refused(checksum: int) -> None:
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        split(checksum)
