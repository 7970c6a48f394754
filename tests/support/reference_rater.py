"""The tests' independent reference rater: the rating rules applied literally to the pricebook JSON.

Every test that checks an amount the system computed (a result blob, a warehouse row, an
invoice) compares it with this module, so it deliberately shares nothing with production
code: no ``processor.rating``, no pricebook model, no ``Decimal`` context, no currency
table from ``shared.domain.money``. It reads the pricebook *dictionary* (the JSON a test uploads,
or the sample file on disk) and computes with exact fractions, rounding written out by hand:

    gross    = unit_price * quantity
    discount = round_half_even(gross * pct / 100)   # the tier with the largest
                                                    # min_quantity not above quantity
    net      = gross - discount
    tax      = round_half_even(net * tax_pct / 100)
    total    = net + tax

All amounts are integers of the currency's minor unit.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

#: The rated figures of one charge, in minor units (the columns of a result and of ``charges``).
FIGURES = ("gross", "discount", "net", "tax", "total")
#: The figures of one invoice: its line count, quantity sum and the sums of :data:`FIGURES`.
INVOICE_FIGURES = ("lines", "quantity", *FIGURES)

SAMPLE_BOOK_PATH = (
    Path(__file__).resolve().parents[2] / "shared" / "domain" / "pricebooks" / "sample.json"
)
#: The sample pricebook the initiator installs when none is current, read from its JSON.
SAMPLE_BOOK: dict[str, Any] = json.loads(SAMPLE_BOOK_PATH.read_text(encoding="utf-8"))

# Decimal places of the minor unit for the currencies a test book may use. Written out
# here on purpose (ISO 4217) rather than imported: an unknown currency is a KeyError.
_MINOR_DIGITS = {"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0, "KWD": 3}


class Line(Protocol):
    """What the reference needs of one transaction (``shared.domain.transactions.Transaction`` and
    the tests' own records both fit)."""

    @property
    def customer_id(self) -> str: ...
    @property
    def sku(self) -> str: ...
    @property
    def quantity(self) -> int: ...
    @property
    def region(self) -> str: ...


@dataclass(frozen=True)
class ReferenceCharge:
    """The expected charge of one transaction; ``ties`` counts the roundings (discount,
    tax) whose exact value lay on half a minor unit, so a test can prove it exercised them."""

    currency: str
    unit_price: int
    amounts: Mapping[str, int]
    """One value per name of :data:`FIGURES`."""
    ties: int

    def figures(self) -> dict[str, int]:
        """``{"gross": …, "discount": …, "net": …, "tax": …, "total": …}``"""
        return {name: self.amounts[name] for name in FIGURES}


def round_half_even(value: Fraction) -> int:
    """Round an exact non-negative value to an integer, halves to the even neighbour."""
    floor = value.numerator // value.denominator
    rest = value - floor
    if rest != Fraction(1, 2):
        return floor + 1 if rest > Fraction(1, 2) else floor
    return floor if floor % 2 == 0 else floor + 1


def _is_tie(value: Fraction) -> bool:
    return value - value.numerator // value.denominator == Fraction(1, 2)


def reference_charge(
    book: Mapping[str, Any], sku: str, quantity: int, region: str
) -> ReferenceCharge:
    """The charge of ``quantity`` units of ``sku`` in ``region`` under ``book`` (the JSON)."""
    currency = book["currency"]
    price = book["skus"][sku]
    unit_price = Fraction(price["unit_price"]) * 10 ** _MINOR_DIGITS[currency]
    if unit_price.denominator != 1:
        raise ValueError(f"{sku}'s price {price['unit_price']} is finer than {currency} allows")
    gross = int(unit_price) * quantity
    reached = [tier for tier in price["tiers"] if tier["min_quantity"] <= quantity]
    pct = (
        Fraction(max(reached, key=lambda tier: tier["min_quantity"])["discount_pct"])
        if reached
        else Fraction(0)
    )
    exact_discount = gross * pct / 100
    net = gross - round_half_even(exact_discount)
    exact_tax = net * Fraction(book["regions"][region]["tax_pct"]) / 100
    tax = round_half_even(exact_tax)
    return ReferenceCharge(
        currency=currency,
        unit_price=int(unit_price),
        amounts={
            "gross": gross,
            "discount": gross - net,
            "net": net,
            "tax": tax,
            "total": net + tax,
        },
        ties=int(_is_tie(exact_discount)) + int(_is_tie(exact_tax)),
    )


def reference_invoices(book: Mapping[str, Any], lines: Iterable[Line]) -> dict[str, dict[str, int]]:
    """Per customer: line count, quantity and the sums of the reference charges."""
    invoices: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(INVOICE_FIGURES, 0))
    for line in lines:
        charge = reference_charge(book, line.sku, line.quantity, line.region)
        invoice = invoices[line.customer_id]
        invoice["lines"] += 1
        invoice["quantity"] += line.quantity
        for name in FIGURES:
            invoice[name] += charge.amounts[name]
    return dict(invoices)
