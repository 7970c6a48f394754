"""The rater, against figures worked out by hand in the comments of each case.

Rounding is half-to-even at the minor unit: x.5 goes to the even neighbour (12.5 -> 12,
13.5 -> 14), anything else to the nearest.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from processor.rating import Rater, rate, rater_for
from shared.domain.charges import CustomerSubtotal, RatedCharge, subtotals
from shared.domain.pricebook import Pricebook, load_pricebook, sample_pricebook
from shared.domain.transactions import Transaction

USD_BOOK: dict[str, Any] = {
    "currency": "USD",
    "skus": {
        # 25 cents; 5 % from 10 units.
        "TIE-DOWN": {"unit_price": "0.25", "tiers": [{"min_quantity": 10, "discount_pct": "5"}]},
        # 27 cents; 5 % from 10 units.
        "TIE-UP": {"unit_price": "0.27", "tiers": [{"min_quantity": 10, "discount_pct": "5"}]},
        "PLAIN-125": {"unit_price": "1.25"},
        "PLAIN-135": {"unit_price": "1.35"},
        "PLAIN-400": {"unit_price": "4.00"},
        "PLAIN-1200": {"unit_price": "12.00"},
        # 10.00 USD; 5 % from 10 units, 12.5 % from 50 units.
        "SEAT": {
            "unit_price": "10.00",
            "tiers": [
                {"min_quantity": 50, "discount_pct": "12.5"},
                {"min_quantity": 10, "discount_pct": "5"},
            ],
        },
        # 99,999.99 USD; 17.5 % from a million units.
        "BIG": {
            "unit_price": "99999.99",
            "tiers": [{"min_quantity": 1_000_000, "discount_pct": "17.5"}],
        },
    },
    "regions": {
        "EU": {"tax_pct": "20"},
        "TEN": {"tax_pct": "10"},
        "US": {"tax_pct": "8.875"},
        "ZERO": {"tax_pct": "0"},
    },
}

JPY_BOOK: dict[str, Any] = {
    "currency": "JPY",
    "skus": {
        "RAMEN": {"unit_price": "1200", "tiers": [{"min_quantity": 3, "discount_pct": "7.5"}]},
        "GUM": {"unit_price": "125"},
    },
    "regions": {"JP": {"tax_pct": "10"}},
}

WHEN = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def book(document: dict[str, Any]) -> Pricebook:
    return load_pricebook(json.dumps(document))


def txn(
    sku: str, quantity: int, region: str, customer: str = "C-1", tid: str = "T-1"
) -> Transaction:
    return Transaction(tid, customer, sku, quantity, region, WHEN)


def figures(charge: RatedCharge) -> tuple[int, int, int, int, int, int]:
    """(unit_price, gross, discount, net, tax, total)."""
    return (charge.unit_price, charge.gross, charge.discount, charge.net, charge.tax, charge.total)


@pytest.mark.parametrize(
    ("sku", "quantity", "region", "expected"),
    [
        # Discount ties.
        # 25 * 10 = 250; 250 * 5 / 100 = 12.5 -> 12 (even); net 238; 238 * 10 / 100 = 23.8 -> 24
        ("TIE-DOWN", 10, "TEN", (25, 250, 12, 238, 24, 262)),
        # 27 * 10 = 270; 270 * 5 / 100 = 13.5 -> 14 (even); net 256; 25.6 -> 26
        ("TIE-UP", 10, "TEN", (27, 270, 14, 256, 26, 282)),
        # Tax ties.
        # 125, no tier; 125 * 10 / 100 = 12.5 -> 12
        ("PLAIN-125", 1, "TEN", (125, 125, 0, 125, 12, 137)),
        # 135; 135 * 10 / 100 = 13.5 -> 14
        ("PLAIN-135", 1, "TEN", (135, 135, 0, 135, 14, 149)),
        # 400; 400 * 8.875 / 100 = 35.5 -> 36
        ("PLAIN-400", 1, "US", (400, 400, 0, 400, 36, 436)),
        # 1200; 1200 * 8.875 / 100 = 106.5 -> 106
        ("PLAIN-1200", 1, "US", (1200, 1200, 0, 1200, 106, 1306)),
        # Tier boundaries of SEAT (1000 cents).
        # 9 units: below the first tier; 9000, no discount; 9000 * 20 % = 1800
        ("SEAT", 9, "EU", (1000, 9000, 0, 9000, 1800, 10800)),
        # 10 units: first tier; 10000 * 5 % = 500; net 9500; 9500 * 20 % = 1900
        ("SEAT", 10, "EU", (1000, 10000, 500, 9500, 1900, 11400)),
        # 49 units: still first tier; 49000 * 5 % = 2450; net 46550; 46550 * 20 % = 9310
        ("SEAT", 49, "EU", (1000, 49000, 2450, 46550, 9310, 55860)),
        # 50 units: second tier; 50000 * 12.5 % = 6250; net 43750; 43750 * 20 % = 8750
        ("SEAT", 50, "EU", (1000, 50000, 6250, 43750, 8750, 52500)),
        # Zero-tax region: 10 units as above but tax 0.
        ("SEAT", 10, "ZERO", (1000, 10000, 500, 9500, 0, 9500)),
        # Large: 9,999,999 cents * 1,000,000 = 9,999,999,000,000;
        # 17.5 % of it = 9,999,999,000 * 175 = 1,749,999,825,000;
        # net 8,249,999,175,000; tax 8.875 % = 659,999,934,000 (8 %) + 72,187,492,781.25
        # (0.875 %) = 732,187,426,781.25 -> 732,187,426,781
        (
            "BIG",
            1_000_000,
            "US",
            (
                9_999_999,
                9_999_999_000_000,
                1_749_999_825_000,
                8_249_999_175_000,
                732_187_426_781,
                8_982_186_601_781,
            ),
        ),
        # One unit below the tier: 9,999,999 * 999,999 = 9,999,999,000,000 - 9,999,999
        # = 9,999,989,000,001, no discount; tax = 799,999,120,000.08 (8 %)
        # + 87,499,903,750.00875 (0.875 %) = 887,499,023,750.08875 -> 887,499,023,750
        (
            "BIG",
            999_999,
            "US",
            (
                9_999_999,
                9_999_989_000_001,
                0,
                9_999_989_000_001,
                887_499_023_750,
                10_887_488_023_751,
            ),
        ),
    ],
)
def test_usd_golden_figures(
    sku: str, quantity: int, region: str, expected: tuple[int, int, int, int, int, int]
) -> None:
    assert figures(rate(txn(sku, quantity, region), book(USD_BOOK))) == expected


@pytest.mark.parametrize(
    ("sku", "quantity", "expected"),
    [
        # Yen have no minor unit: 1200 yen * 3 = 3600; 7.5 % = 270; net 3330; 10 % = 333
        ("RAMEN", 3, (1200, 3600, 270, 3330, 333, 3663)),
        # 2 bowls: below the tier; 2400; tax 240
        ("RAMEN", 2, (1200, 2400, 0, 2400, 240, 2640)),
        # 125 yen; 10 % = 12.5 -> 12 yen (even)
        ("GUM", 1, (125, 125, 0, 125, 12, 137)),
    ],
)
def test_jpy_golden_figures(sku: str, quantity: int, expected: tuple[int, ...]) -> None:
    assert figures(rate(txn(sku, quantity, "JP"), book(JPY_BOOK))) == expected


def test_a_charge_carries_the_transaction_identity_and_quantity() -> None:
    charge = rate(txn("SEAT", 10, "EU", customer="ACME", tid="T-42"), book(USD_BOOK))

    assert charge == RatedCharge(
        transaction_id="T-42",
        customer_id="ACME",
        sku="SEAT",
        region="EU",
        quantity=10,
        unit_price=1000,
        gross=10000,
        discount=500,
        net=9500,
        tax=1900,
        total=11400,
    )
    assert all(type(getattr(charge, f)) is int for f in ("gross", "discount", "tax", "total"))


def test_sample_pricebook_rates_a_seat_purchase() -> None:
    # SEAT-PRO 29.99 USD * 57 = 170,943 cents; tier 50 -> 12.5 % = 21,367.875 -> 21,368;
    # net 149,575; US 8.875 % = 13,274.78125 -> 13,275; total 162,850
    charge = rate(txn("SEAT-PRO", 57, "US"), sample_pricebook())
    assert figures(charge) == (2999, 170_943, 21_368, 149_575, 13_275, 162_850)


def test_each_batch_is_rated_with_its_own_pinned_book() -> None:
    cheaper = json.loads(json.dumps(USD_BOOK))
    cheaper["skus"]["SEAT"]["unit_price"] = "8.00"
    old_book, new_book = book(USD_BOOK), book(cheaper)

    # 9 seats: 9000 + 20 % = 10800 with the old book, 7200 + 1440 = 8640 with the new one
    assert rate(txn("SEAT", 9, "EU"), old_book).total == 10800
    assert rate(txn("SEAT", 9, "EU"), new_book).total == 8640
    assert rate(txn("SEAT", 9, "EU"), old_book).total == 10800


def test_raters_are_cached_per_book_and_old_ones_are_evicted() -> None:
    first = book(USD_BOOK)
    assert rater_for(first) is rater_for(first)

    many = [book(USD_BOOK) for _ in range(20)]
    for each in many:
        # 1 seat: 1000 + 20 % = 1200, whichever cached or fresh rater answers
        assert rate(txn("SEAT", 1, "EU"), each).total == 1200
    assert rater_for(many[-1]).pricebook is many[-1]


@pytest.mark.parametrize(
    ("sku", "region", "missing"), [("NOPE", "EU", "NOPE"), ("SEAT", "MARS", "MARS")]
)
def test_unknown_sku_or_region_raises_key_error(sku: str, region: str, missing: str) -> None:
    with pytest.raises(KeyError, match=missing):
        Rater(book(USD_BOOK)).rate(txn(sku, 1, region))


def test_subtotals_sum_each_customer_separately() -> None:
    rater = Rater(book(USD_BOOK))
    charges = [
        rater.rate(txn("SEAT", 10, "EU", customer="ACME", tid="1")),  # 10000 500 9500 1900 11400
        rater.rate(txn("PLAIN-125", 1, "TEN", customer="GLOBEX", tid="2")),  # 125 0 125 12 137
        rater.rate(txn("SEAT", 9, "ZERO", customer="ACME", tid="3")),  # 9000 0 9000 0 9000
        rater.rate(txn("TIE-UP", 10, "TEN", customer="ACME", tid="4")),  # 270 14 256 26 282
    ]

    result = subtotals(charges)

    assert result == {
        # lines 3; quantity 10 + 9 + 10 = 29; gross 10000 + 9000 + 270 = 19270;
        # discount 500 + 0 + 14 = 514; net 9500 + 9000 + 256 = 18756; tax 1900 + 0 + 26 = 1926;
        # total 11400 + 9000 + 282 = 20682
        "ACME": CustomerSubtotal("ACME", 3, 29, 19270, 514, 18756, 1926, 20682),
        "GLOBEX": CustomerSubtotal("GLOBEX", 1, 1, 125, 0, 125, 12, 137),
    }


def test_subtotals_of_nothing_is_empty() -> None:
    assert subtotals([]) == {}
