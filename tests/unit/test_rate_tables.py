"""A rater's tables hold, for every SKU, quantity and region, what the pricebook itself says.

:class:`~processor.rate_tables.RateTables` is built from the book's precomputed lookups and
converts each distinct percentage once; both raters read it, so the property tests that hold
them equal to each other cannot catch a table that is wrong for both. Here each table is
checked against the book's own answers (``unit_price_minor``, ``discount_pct_for`` at and
around every tier boundary, ``tax_pct``).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from decimal import Decimal

from hypothesis import given, settings

from processor.integer_rater import percent_ratio
from processor.rate_tables import RateTables
from processor.rating import _fraction
from shared.domain.pricebook import Pricebook, load_pricebook
from tests.unit.test_integer_rater import pricebooks

#: Equal percentages spelled differently, shared by SKUs and a region, and a tier at 1.
SPELLINGS = load_pricebook(
    json.dumps(
        {
            "currency": "USD",
            "skus": {
                "A": {
                    "unit_price": "1.50",
                    "tiers": [
                        {"min_quantity": 10, "discount_pct": "5"},
                        {"min_quantity": 1, "discount_pct": "2.50"},
                    ],
                },
                "B": {"unit_price": "3", "tiers": [{"min_quantity": 10, "discount_pct": "5.00"}]},
                "C": {"unit_price": "0.07", "tiers": []},
            },
            "regions": {"EU": {"tax_pct": "5.0"}, "US": {"tax_pct": "0"}},
        }
    )
)


def _quantities(book: Pricebook) -> set[int]:
    """1, 1,000,000, and each tier threshold with its neighbours."""
    found = {1, 1_000_000}
    for price in book.skus.values():
        for tier in price.tiers:
            found |= {max(1, tier.min_quantity - 1), tier.min_quantity, tier.min_quantity + 1}
    return found


def _assert_tables_agree(book: Pricebook) -> None:
    for share in (percent_ratio, _fraction):
        tables = RateTables(book, share)
        assert tables.skus.keys() == book.skus.keys()
        assert tables.taxes == {region: share(book.tax_pct(region)) for region in book.regions}
        for sku, (unit_price, thresholds, discounts) in tables.skus.items():
            assert unit_price == book.unit_price_minor(sku)
            for quantity in _quantities(book):
                reached = bisect_right(thresholds, quantity)
                pct = book.discount_pct_for(sku, quantity)
                if reached:
                    assert discounts[reached - 1] == share(pct), (sku, quantity)
                else:
                    assert pct == 0, (sku, quantity)


def test_tables_agree_with_the_book_when_percentages_repeat_in_other_spellings() -> None:
    _assert_tables_agree(SPELLINGS)
    tables = RateTables(SPELLINGS, percent_ratio)
    assert tables.skus["A"] == (150, (1, 10), ((1, 40), (1, 20)))
    assert tables.skus["B"] == (300, (10,), ((1, 20),))
    assert tables.skus["C"] == (7, (), ())
    assert RateTables(SPELLINGS, _fraction).taxes["EU"] == Decimal("0.05")


@settings(max_examples=200, deadline=None)
@given(pricebooks())
def test_tables_agree_with_the_book(book: Pricebook) -> None:
    _assert_tables_agree(book)
