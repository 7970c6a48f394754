"""The exact problems a rejected pricebook reports: path and message, pinned.

These texts are what a user reads when an upload is refused, so they are part of the
interface. Loading is tuned for speed (checks in pydantic-core, a per-document cache of
percentages); this table holds the texts and their order still.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from shared.domain.pricebook import PricebookError, load_pricebook

PATTERN = "String should match pattern '^[A-Za-z0-9_.:-]{1,64}$'"


def book(
    skus: dict[str, Any] | None = None,
    regions: dict[str, Any] | None = None,
    currency: str = "USD",
    **extra: Any,
) -> dict[str, Any]:
    document = {
        "currency": currency,
        "skus": skus or {"A": {"unit_price": "1"}},
        "regions": regions or {"EU": {"tax_pct": "20"}},
    }
    return document | extra


def tier(quantity: Any, pct: Any) -> dict[str, Any]:
    return {"min_quantity": quantity, "discount_pct": pct}


def problems_of(document: dict[str, Any]) -> list[str]:
    with pytest.raises(PricebookError) as caught:
        load_pricebook(json.dumps(document))
    return caught.value.problems


CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "float price": (
        book({"A": {"unit_price": 12.34}}),
        [
            "skus.A.unit_price: got the JSON number 12.34; write decimals as JSON strings "
            '(e.g. "12.34") or integers, because floats lose cents'
        ],
    ),
    "float discount": (
        book({"A": {"unit_price": "1", "tiers": [tier(10, 2.5)]}}),
        [
            "skus.A.tiers[0].discount_pct: got the JSON number 2.5; write decimals as JSON "
            'strings (e.g. "2.5") or integers, because floats lose cents'
        ],
    ),
    "bool price": (
        book({"A": {"unit_price": True}}),
        ["skus.A.unit_price: expected a decimal string or an integer, not a boolean"],
    ),
    "bool tax": (
        book(regions={"EU": {"tax_pct": False}}),
        ["regions.EU.tax_pct: expected a decimal string or an integer, not a boolean"],
    ),
    "null price": (
        book({"A": {"unit_price": None}}),
        ["skus.A.unit_price: Decimal input should be an integer, float, string or Decimal object"],
    ),
    "over 100 %": (
        book({"A": {"unit_price": "1", "tiers": [tier(10, "100.01")]}}),
        ["skus.A.tiers[0].discount_pct: Input should be less than or equal to 100"],
    ),
    "negative tax": (
        book(regions={"EU": {"tax_pct": "-0.5"}}),
        ["regions.EU.tax_pct: Input should be greater than or equal to 0"],
    ),
    "too many digits in a price": (
        book({"A": {"unit_price": "123456789012345678901"}}),
        ["skus.A.unit_price: Decimal input should have no more than 20 digits in total"],
    ),
    "too many digits in a percentage": (
        book({"A": {"unit_price": "1", "tiers": [tier(10, "1.0000000000001")]}}),
        ["skus.A.tiers[0].discount_pct: Decimal input should have no more than 12 digits in total"],
    ),
    # The range is checked before the digit count.
    "negative and too long": (
        book({"A": {"unit_price": "-1E+30"}}),
        ["skus.A.unit_price: Input should be greater than or equal to 0"],
    ),
    "over 100 % and too long": (
        book(regions={"EU": {"tax_pct": "100.0000000000001"}}),
        ["regions.EU.tax_pct: Input should be less than or equal to 100"],
    ),
    "NaN": (
        book({"A": {"unit_price": "NaN"}}),
        ["skus.A.unit_price: Input should be a finite number"],
    ),
    "infinite percentage": (
        book(regions={"EU": {"tax_pct": "Infinity"}}),
        ["regions.EU.tax_pct: Input should be a finite number"],
    ),
    "not a number": (
        book({"A": {"unit_price": "cheap"}}),
        ["skus.A.unit_price: Input should be a valid decimal"],
    ),
    "finer than cents": (
        book({"A": {"unit_price": "12.345"}}),
        ["skus.A.unit_price: 12.345 is finer than the currency's minor unit (2 decimal places)"],
    ),
    "finer than yen": (
        book({"A": {"unit_price": "1200.5"}}, currency="JPY"),
        ["skus.A.unit_price: 1200.5 is finer than the currency's minor unit (0 decimal places)"],
    ),
    "duplicate tier quantities": (
        book(
            {
                "A": {
                    "unit_price": "1",
                    "tiers": [tier(50, "1"), tier(10, "5"), tier(50, "2"), tier(10, "7")],
                }
            }
        ),
        ["skus.A.tiers: duplicate min_quantity 10, 50"],
    ),
    "zero quantity": (
        book({"A": {"unit_price": "1", "tiers": [tier(0, "5")]}}),
        ["skus.A.tiers[0].min_quantity: Input should be greater than or equal to 1"],
    ),
    "float quantity": (
        book({"A": {"unit_price": "1", "tiers": [tier(10.0, "5")]}}),
        ["skus.A.tiers[0].min_quantity: Input should be a valid integer"],
    ),
    "unknown keys": (
        book(
            {"A": {"unit_price": "1", "colour": "red", "tiers": [tier(1, "1") | {"note": "x"}]}},
            note="hi",
        ),
        [
            "skus.A.tiers[0].note: Extra inputs are not permitted",
            "skus.A.colour: Extra inputs are not permitted",
            "note: Extra inputs are not permitted",
        ],
    ),
    "bad codes": (
        book({"bad sku!": {"unit_price": "1"}}, regions={"E U": {"tax_pct": "1"}}),
        [f"skus.bad sku! (key): {PATTERN}", f"regions.E U (key): {PATTERN}"],
    ),
    "bad currency": (
        book(currency="usd"),
        ["currency: 'usd' is not an ISO 4217 code (3 upper-case letters)"],
    ),
    # A spelling that failed once fails again at every path it appears at.
    "the same bad percentage three times": (
        book(
            {
                "A": {"unit_price": "1", "tiers": [tier(1, "101"), tier(2, "5")]},
                "B": {"unit_price": "1", "tiers": [tier(1, "5"), tier(2, "101")]},
            },
            regions={"EU": {"tax_pct": "101"}},
        ),
        [
            "skus.A.tiers[0].discount_pct: Input should be less than or equal to 100",
            "skus.B.tiers[1].discount_pct: Input should be less than or equal to 100",
            "regions.EU.tax_pct: Input should be less than or equal to 100",
        ],
    ),
    "every problem at once, in document order": (
        book(
            {
                "A": {"unit_price": 1.5},
                "B": {"unit_price": "1.234", "tiers": [tier(5, "200"), tier(6, "5")]},
                "C": {"unit_price": "2", "tiers": [tier(3, "5"), tier(3, "5")]},
            },
            regions={"EU": {"tax_pct": "-1"}, "US": {"tax_pct": 8.875}},
            currency="EUR",
        ),
        [
            "skus.A.unit_price: got the JSON number 1.5; write decimals as JSON strings "
            '(e.g. "1.5") or integers, because floats lose cents',
            "skus.B.unit_price: 1.234 is finer than the currency's minor unit (2 decimal places)",
            "skus.B.tiers[0].discount_pct: Input should be less than or equal to 100",
            "skus.C.tiers: duplicate min_quantity 3",
            "regions.EU.tax_pct: Input should be greater than or equal to 0",
            "regions.US.tax_pct: got the JSON number 8.875; write decimals as JSON strings "
            '(e.g. "8.875") or integers, because floats lose cents',
        ],
    ),
}


@pytest.mark.parametrize(("document", "expected"), list(CASES.values()), ids=list(CASES))
def test_a_rejected_book_lists_exactly_these_problems(
    document: dict[str, Any], expected: list[str]
) -> None:
    assert problems_of(document) == expected


def test_unsorted_tiers_are_sorted_and_keep_their_spelling() -> None:
    tiers = [tier(50, "12.50"), tier(10, "5"), tier(20, "5.0")]
    loaded = load_pricebook(json.dumps(book({"A": {"unit_price": "3", "tiers": tiers}})))

    sorted_tiers = loaded.skus["A"].tiers
    assert [t.min_quantity for t in sorted_tiers] == [10, 20, 50]
    # Equal values spelled differently stay as written; the canonical form folds them.
    assert [str(t.discount_pct) for t in sorted_tiers] == ["5", "5.0", "12.50"]
    assert loaded.discount_pct_for("A", 20) == Decimal(5)


def test_a_repeated_percentage_is_one_value_everywhere_it_appears() -> None:
    skus = {f"S{n}": {"unit_price": "1", "tiers": [tier(10, "7.5")]} for n in range(50)}
    loaded = load_pricebook(json.dumps(book(skus, regions={"EU": {"tax_pct": "7.5"}})))

    assert {sku: loaded.discount_pct_for(sku, 10) for sku in skus} == dict.fromkeys(
        skus, Decimal("7.5")
    )
    assert loaded.tax_pct("EU") == Decimal("7.5")


def test_a_big_book_loads_equal_every_time_and_round_trips() -> None:
    skus = {
        f"SKU-{n:05d}": {
            "unit_price": f"{n // 100}.{n % 100:02d}",
            "tiers": [tier(10 + n % 7, "5"), tier(100 + n % 7, "12.5")] if n % 5 < 3 else [],
        }
        for n in range(2_000)
    }
    document = json.dumps(book(skus, regions={"EU": {"tax_pct": "20"}, "US": {"tax_pct": "8.875"}}))

    first, second = load_pricebook(document), load_pricebook(document)
    again = load_pricebook(first.to_json())

    assert first == second == again
    assert first.version_hash() == again.version_hash()
    assert first.rate_lookups()[0]["SKU-01234"] == 1234
    assert first.discount_pct_for("SKU-00002", 1_000) == Decimal("12.5")
