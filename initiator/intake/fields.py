"""The batch file's field rules, applied to one line's values, fast path first.

Every line goes through :meth:`TransactionValidator.accept`: one chain of cheap checks
(precompiled regexes, cached pricebook and customer lookups, ``datetime.fromisoformat``
after a shape check). Only when that chain fails does
:meth:`TransactionValidator.check_values` work out which fields are wrong and why, so the
error path can afford clear messages while the common path stays at a few microseconds.

A timestamp is valid only if the warehouse can store it: it keeps every ``occurred_at`` in
UTC, so a local time whose UTC instant falls outside years 1 to 9999 (``9999-12-31T23:59:59
-23:59``) is refused here, with its line, rather than failing its chunk in the controller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar, Protocol

from initiator.intake.duplicates import Duplicate, DuplicateDetector
from initiator.intake.problems import ProblemCollector
from shared.domain.transactions import Transaction

REQUIRED_FIELDS = ("transaction_id", "customer_id", "sku", "quantity", "region", "occurred_at")
MAX_QUANTITY = 1_000_000
MAX_ID_LENGTH = 64

ID_ALPHABET = "A-Za-z0-9_.:-"
#: An id: 1-64 characters of :data:`ID_ALPHABET`.
ID_PATTERN = f"[{ID_ALPHABET}]{{1,{MAX_ID_LENGTH}}}"
_is_id = re.compile(ID_PATTERN).fullmatch
_first_illegal_id_char = re.compile(f"[^{ID_ALPHABET}]").search
# RFC 3339 shape: seconds required, fraction optional, offset required ("Z" or +hh:mm).
_TIMESTAMP_SHAPE = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?"
_is_timestamp = re.compile(_TIMESTAMP_SHAPE + r"(?:Z|[+-]\d{2}:\d{2})", re.ASCII).fullmatch
_is_timestamp_without_offset = re.compile(_TIMESTAMP_SHAPE, re.ASCII).fullmatch
MAX_QUANTITY_DIGITS = len(str(MAX_QUANTITY))
"""A CSV quantity longer than this is out of range; checked before ``int()`` is paid for."""
_fromisoformat = datetime.fromisoformat
#: Only a date-time in the first or last year can leave the range once converted to UTC.
_EDGE_YEARS = frozenset({datetime.min.year, datetime.max.year})


class CodeBook(Protocol):
    """What validation needs from a pricebook (``shared.domain.pricebook.Pricebook`` fits)."""

    @property
    def skus(self) -> Mapping[str, object]:
        """Every SKU code (``initiator/intake/line_pattern.py`` checks a column against them)."""
        ...

    @property
    def regions(self) -> Mapping[str, object]:
        """Every region code."""
        ...

    def has_sku(self, sku: str) -> bool: ...

    def has_region(self, region: str) -> bool: ...


@dataclass(frozen=True)
class KnownCodes:
    """A pricebook's codes and nothing else: the :class:`CodeBook` an intake helper is sent
    with every segment. A whole :class:`~shared.domain.pricebook.Pricebook` of 5,000 SKUs
    pickles to ~0.8 MB of ``Decimal`` tiers, a third of a second each way per segment; its
    codes to ~60 KB."""

    skus: Mapping[str, None]
    regions: Mapping[str, None]

    @classmethod
    def of(cls, book: CodeBook) -> KnownCodes:
        return cls(dict.fromkeys(book.skus), dict.fromkeys(book.regions))

    def has_sku(self, sku: str) -> bool:
        return sku in self.skus

    def has_region(self, region: str) -> bool:
        return region in self.regions


class TransactionValidator:
    """Checks one line's fields and the batch-wide uniqueness of transaction ids."""

    def __init__(
        self, codes: CodeBook, duplicates: DuplicateDetector, problems: ProblemCollector
    ) -> None:
        self._add_id = duplicates.add
        self._problems = problems
        # Canonical strings per known code: one dict lookup per line instead of a method
        # call, and every transaction shares the same str object for its SKU.
        self._skus = _CodeCache(codes.has_sku)
        self._regions = _CodeCache(codes.has_region)
        self._customers = _CustomerCache()

    def accept(
        self,
        line: int,
        transaction_id: str,
        customer_id: str,
        sku: str,
        quantity: int | None,
        region: str,
        occurred_at: str,
    ) -> Transaction | None:
        """The transaction, or None after recording this line's problems.

        ``quantity`` is None when the format layer could not read an integer (it has then
        recorded the problem itself).
        """
        canonical_sku = self._skus[sku]
        canonical_region = self._regions[region]
        canonical_customer = self._customers[customer_id]
        if (
            _is_id(transaction_id)
            and canonical_customer is not None
            and canonical_sku is not None
            and canonical_region is not None
            and quantity is not None
            and 0 < quantity <= MAX_QUANTITY
            and _is_timestamp(occurred_at)
        ):
            try:
                when = _fromisoformat(occurred_at)
            except ValueError:
                pass  # a well-shaped impossible date-time, e.g. February 30
            else:
                if when.year in _EDGE_YEARS and not storable(when):
                    self._reject(
                        line, transaction_id, customer_id, sku, quantity, region, occurred_at
                    )
                    return None
                duplicates = self._add_id(transaction_id, line)
                if duplicates:
                    self.report_duplicates(duplicates)
                transaction = Transaction(
                    transaction_id,
                    canonical_customer,
                    canonical_sku,
                    quantity,
                    canonical_region,
                    when,
                )
                transaction.occurred_at_text = occurred_at  # for the payload, see there
                return transaction
        self._reject(line, transaction_id, customer_id, sku, quantity, region, occurred_at)
        return None

    def _reject(
        self,
        line: int,
        transaction_id: str,
        customer_id: str,
        sku: str,
        quantity: int | None,
        region: str,
        occurred_at: str,
    ) -> None:
        values = {
            "transaction_id": transaction_id,
            "customer_id": customer_id,
            "sku": sku,
            "region": region,
            "occurred_at": occurred_at,
        }
        self.check_values(line, values, quantity)

    def check_unique(self, line: int, transaction_id: str) -> None:
        duplicates = self._add_id(transaction_id, line)
        if duplicates:
            self.report_duplicates(duplicates)

    def report_duplicates(self, duplicates: Iterable[Duplicate]) -> None:
        for transaction_id, line, first_line in duplicates:
            self._problems.add(
                line,
                "transaction_id",
                f"duplicate transaction_id {transaction_id!r}: first seen on line {first_line}",
            )

    def check_values(self, line: int, values: dict[str, str], quantity: int | None) -> None:
        """Record a problem for each bad value; fields absent from ``values`` were reported
        by the format layer (e.g. a JSON number where a string belongs), as was a None
        ``quantity``."""
        add = self._problems.add
        for name in ("transaction_id", "customer_id"):
            if name in values:
                reason = id_problem(name, values[name])
                if reason is not None:
                    add(line, name, reason)
        for name, codes in (("sku", self._skus), ("region", self._regions)):
            if name in values and codes[values[name]] is None:
                add(
                    line,
                    name,
                    f"unknown {name} {values[name]!r}: not in the pricebook "
                    "(codes are case-sensitive)",
                )
        if quantity is not None and not 0 < quantity <= MAX_QUANTITY:
            # JSON Lines quantities come as numbers: a long one is described by its length.
            shown = str(quantity) if abs(quantity) < 10**20 else f"of {len(str(quantity)):,} digits"
            add(line, "quantity", f"quantity {shown} is out of range (1 to {MAX_QUANTITY:,})")
        if "occurred_at" in values:
            reason = timestamp_problem(values["occurred_at"])
            if reason is not None:
                add(line, "occurred_at", reason)
        transaction_id = values.get("transaction_id")
        if transaction_id is not None and _is_id(transaction_id):
            self.check_unique(line, transaction_id)


class _CodeCache(dict[str, str | None]):
    """Maps a code to its canonical string, or None when the pricebook lacks it.

    A dict subclass so the per-line lookup is a plain subscription; only the first sight
    of a known code calls the pricebook. Unknown codes are not kept, so a hostile file of
    millions of distinct bad codes cannot grow the cache beyond the pricebook's size.
    """

    def __init__(self, lookup: Callable[[str], bool]) -> None:
        super().__init__()
        self._lookup = lookup

    def __missing__(self, code: str) -> str | None:
        if not self._lookup(code):
            return None
        self[code] = code
        return code


class _CustomerCache(dict[str, str | None]):
    """Valid customer ids seen so far, each mapped to one shared str object.

    Customers repeat across many lines of a batch, so a dict hit replaces the regex on the
    hot path, and transactions held for a chunk share one string per customer. Capped, so
    a batch of millions of distinct customers costs a regex per line rather than memory.
    """

    limit: ClassVar[int] = 100_000

    def __missing__(self, customer_id: str) -> str | None:
        if not _is_id(customer_id):
            return None
        if len(self) < self.limit:
            self[customer_id] = customer_id
        return customer_id


def id_problem(name: str, value: str) -> str | None:
    if not value:
        return f"{name} is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"{name} is {len(value)} characters long (at most {MAX_ID_LENGTH})"
    illegal = _first_illegal_id_char(value)
    if illegal is not None:
        return (
            f"{name} {value!r} contains {illegal.group()!r} at position {illegal.start() + 1}; "
            f"allowed are letters A-Z a-z, digits and _ . : -"
        )
    return None


def storable(when: datetime) -> bool:
    """Whether the UTC instant of an aware date-time is within years 1 to 9999."""
    try:
        when.astimezone(UTC)
    except OverflowError:
        return False
    return True


def timestamp_problem(text: str) -> str | None:
    if _is_timestamp(text):
        try:
            when = datetime.fromisoformat(text)
        except ValueError as exc:
            return f"occurred_at {text!r} is not a real date-time: {exc}"
        if not storable(when):
            return (
                f"occurred_at {text!r} is outside the range the warehouse stores: in UTC it "
                "falls before 0001-01-01T00:00:00Z or after 9999-12-31T23:59:59.999999Z"
            )
        return None
    if _is_timestamp_without_offset(text):
        return f"occurred_at {text!r} has no UTC offset; end it with 'Z' or an offset like +02:00"
    return (
        f"occurred_at {text!r} is not an ISO 8601 date-time with a UTC offset "
        "(expected e.g. 2026-01-31T13:45:00Z or 2026-01-31T14:45:00.250+01:00)"
    )
