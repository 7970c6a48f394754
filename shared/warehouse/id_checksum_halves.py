"""A chunk's id checksum as two 32-bit halves, so that SQL can add up a batch's chunks.

The id checksum (:func:`shared.domain.transactions.id_checksum_of`) is a sum modulo 2**64,
so a batch's is the sum of its chunks' partial checksums modulo 2**64. No portable SQL
adds unsigned 64-bit values, though: SQLite's integers are signed 64-bit and its ``SUM``
raises on overflow (and :class:`~shared.warehouse.types.UInt64` is text there). Halves of
32 bits are plain ``BIGINT`` s: even 2**31 chunks' halves sum below 2**63 on every
dialect, and the two sums give the batch's checksum back exactly (:func:`join_sums`).
"""

from __future__ import annotations

from shared.domain.transactions import ID_CHECKSUM_MODULUS

HALF_BITS = 32
_LOW_MASK = (1 << HALF_BITS) - 1


def split(checksum: int) -> tuple[int, int]:
    """``(high, low)``: the upper and lower 32 bits of an unsigned 64-bit checksum."""
    if not 0 <= checksum < ID_CHECKSUM_MODULUS:
        raise ValueError(f"{checksum} is not an unsigned 64-bit checksum")
    return checksum >> HALF_BITS, checksum & _LOW_MASK


def join_sums(high_sum: int, low_sum: int) -> int:
    """The sum modulo 2**64 of the checksums whose halves summed to ``high_sum``, ``low_sum``."""
    return ((high_sum << HALF_BITS) + low_sum) % ID_CHECKSUM_MODULUS
