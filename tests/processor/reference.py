"""An independent reference rater for the tests: exact fractions, rounding written out by hand.

Deliberately shares nothing with production code (no ``Decimal`` contexts, no pricebook
model): it reads the pricebook dictionary the test wrote and applies design §6 literally.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

#: A pricebook whose figures land on exact halves of a minor unit (rounding ties), with a
#: zero-tax region, tier boundaries and room for large quantities.
TIE_BOOK: dict[str, Any] = {
    "currency": "USD",
    "skus": {
        # 5 ct; 10 % from 5 units: 5 units → gross 25, discount 2.5 → 2 (tie, to even)
        #                          7 units → gross 35, discount 3.5 → 4 (tie, to even)
        "TIE": {
            "unit_price": "0.05",
            "tiers": [
                {"min_quantity": 5, "discount_pct": "10"},
                {"min_quantity": 100, "discount_pct": "50"},
            ],
        },
        # 25 ct, no tiers: 1 unit in EU → tax 2.5 → 2; 3 units → tax 7.5 → 8
        "HALF": {"unit_price": "0.25", "tiers": []},
        "WIDGET": {"unit_price": "12.34", "tiers": [{"min_quantity": 1000, "discount_pct": "7.5"}]},
    },
    "regions": {"EU": {"tax_pct": "10"}, "ZERO": {"tax_pct": "0"}, "US": {"tax_pct": "7.25"}},
}

FIGURES = ("gross", "discount", "net", "tax", "total")


def round_half_even(value: Fraction) -> int:
    floor = value.numerator // value.denominator
    rest = value - floor
    if rest > Fraction(1, 2):
        return floor + 1
    if rest < Fraction(1, 2):
        return floor
    return floor if floor % 2 == 0 else floor + 1


def is_tie(value: Fraction) -> bool:
    return value - (value.numerator // value.denominator) == Fraction(1, 2)


def reference_charge(
    book: dict[str, Any], sku: str, quantity: int, region: str
) -> tuple[dict[str, int], int]:
    """(gross, discount, net, tax, total in cents; how many of the two roundings were exact
    ties). The test books are all USD."""
    price = book["skus"][sku]
    unit_cents = Fraction(price["unit_price"]) * 100
    assert unit_cents.denominator == 1
    gross = int(unit_cents) * quantity
    reached = [t for t in price["tiers"] if t["min_quantity"] <= quantity]
    pct = Fraction(max(reached, key=lambda t: t["min_quantity"])["discount_pct"]) if reached else 0
    raw_discount = gross * Fraction(pct) / 100
    net = gross - round_half_even(raw_discount)
    raw_tax = net * Fraction(book["regions"][region]["tax_pct"]) / 100
    tax = round_half_even(raw_tax)
    figures = {
        "gross": gross,
        "discount": gross - net,
        "net": net,
        "tax": tax,
        "total": net + tax,
    }
    return figures, int(is_tie(raw_discount)) + int(is_tie(raw_tax))
