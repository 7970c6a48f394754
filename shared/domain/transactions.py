"""A transaction of a batch file, and the control totals that prove none was lost.

``Transaction`` is a plain slotted dataclass rather than a pydantic model: the initiator's
parser creates one per line, millions a day, and it has already validated every field by
then (the batch-file rules of ``initiator/intake/fields.py``), so a second validation here
would only cost time. Build one only from that parser, from a chunk payload, or in tests.

It is deliberately not ``frozen``: a frozen dataclass's ``__init__`` sets each field through
``object.__setattr__``, which made creating one about four times dearer (~0.65 µs against
~0.16 µs, a sixth of the parser's time per line). Treat a transaction as a value all the
same: nothing changes one after it is built.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter

from pydantic import BaseModel, ConfigDict, Field

ID_CHECKSUM_MODULUS = 2**64
"""Control-total id checksums are sums modulo 2**64, so they fit an unsigned 64-bit word."""


@dataclass(slots=True)
class Transaction:
    """One validated line of a batch file. ``occurred_at`` always carries a UTC offset."""

    transaction_id: str
    customer_id: str
    sku: str
    quantity: int
    region: str
    occurred_at: datetime
    occurred_at_text: str | None = field(default=None, init=False, compare=False, repr=False)
    """The text ``occurred_at`` was validated from, when the parser built this transaction.

    The chunk payload copies it rather than formatting the datetime again (``isoformat()``
    cost ~0.8 µs a transaction, as much as the rest of the row's encoding). Not an
    ``__init__`` argument, so ``dataclasses.replace`` cannot carry a stale text along, and
    not compared: it is another spelling of ``occurred_at``, not another value.
    """


def transaction_id_hash(transaction_id: str) -> int:
    """An unsigned 64-bit hash of a transaction id: blake2b with an 8-byte digest, big-endian.

    blake2b rather than ``hash()`` because the value must be the same in every process and
    on every run (``hash()`` of a str is salted per process), and it is in the standard library.
    """
    digest = hashlib.blake2b(transaction_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def id_digests(transaction_ids: Iterable[str]) -> bytes:
    """The :func:`transaction_id_hash` of each id as 8 big-endian bytes, joined in order.

    One blake2b call an id and no int object: what a caller that handles many ids at once
    reads back in one C call (``struct`` here, ``array`` for the intake's fingerprints of
    ``initiator.id_window``).
    """
    blake2b = hashlib.blake2b
    return b"".join([blake2b(tid.encode(), digest_size=8).digest() for tid in transaction_ids])


def id_checksum_of(transaction_ids: Iterable[str]) -> int:
    """The sum of :func:`transaction_id_hash` over ``transaction_ids``, modulo 2**64.

    The same value as summing the hashes one by one, at about half the cost per id: the
    8-byte digests are joined and read back as big-endian words by a single ``struct`` call,
    so the only per-id Python work left is the blake2b call itself.
    """
    digests = id_digests(transaction_ids)
    words: tuple[int, ...] = struct.unpack(f">{len(digests) // 8}Q", digests)
    return sum(words) % ID_CHECKSUM_MODULUS


class ControlTotals(BaseModel):
    """Figures taken at intake and compared with the warehouse at reconciliation.

    Every figure is a sum, so the totals are **order-independent**: the initiator counts
    lines in file order, the warehouse sums charges in whatever order chunks were applied,
    and both must agree. ``id_checksum`` is the sum of :func:`transaction_id_hash` over all
    ids modulo 2**64: a lost, duplicated or substituted transaction changes it even when
    the count and quantity happen to match.

    Note ``id_checksum`` is unsigned and may exceed a signed 64-bit SQL ``BIGINT``.
    """

    model_config = ConfigDict(frozen=True)

    transactions: int = Field(ge=0)
    quantity: int = Field(ge=0)
    id_checksum: int = Field(ge=0, lt=ID_CHECKSUM_MODULUS)

    def combine(self, other: ControlTotals) -> ControlTotals:
        """Totals of the union of two disjoint sets (e.g. two chunks of one batch)."""
        return ControlTotals(
            transactions=self.transactions + other.transactions,
            quantity=self.quantity + other.quantity,
            id_checksum=(self.id_checksum + other.id_checksum) % ID_CHECKSUM_MODULUS,
        )


_transaction_id_of = attrgetter("transaction_id")
_quantity_of = attrgetter("quantity")


class ControlTotalsBuilder:
    """Accumulates :class:`ControlTotals` one transaction, or one chunk, at a time."""

    __slots__ = ("_id_checksum", "_quantity", "_transactions")

    def __init__(self) -> None:
        self._transactions = 0
        self._quantity = 0
        self._id_checksum = 0

    def add(self, transaction_id: str, quantity: int) -> None:
        self._transactions += 1
        self._quantity += quantity
        self._id_checksum = (
            self._id_checksum + transaction_id_hash(transaction_id)
        ) % ID_CHECKSUM_MODULUS

    def add_all(self, transactions: Collection[Transaction]) -> None:
        """Add a whole chunk: the same totals as :meth:`add` per transaction, for less
        than half the cost (the initiator adds every transaction of every batch)."""
        self._transactions += len(transactions)
        self._quantity += sum(map(_quantity_of, transactions))
        self._id_checksum = (
            self._id_checksum + id_checksum_of(map(_transaction_id_of, transactions))
        ) % ID_CHECKSUM_MODULUS

    def build(self) -> ControlTotals:
        return ControlTotals(
            transactions=self._transactions,
            quantity=self._quantity,
            id_checksum=self._id_checksum,
        )
