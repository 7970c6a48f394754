"""The pricebook: loading, validation problems with JSON paths, lookups and the version hash."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from shared.domain.pricebook import (
    Pricebook,
    PricebookError,
    RegionTax,
    SkuPrice,
    load_pricebook,
    sample_pricebook,
)


def book_document(**overrides: Any) -> dict[str, Any]:
    """A small valid pricebook document; ``overrides`` replace top-level keys."""
    document: dict[str, Any] = {
        "currency": "USD",
        "skus": {
            "SEAT": {
                "unit_price": "10.00",
                "tiers": [
                    {"min_quantity": 10, "discount_pct": "5"},
                    {"min_quantity": 50, "discount_pct": "12.5"},
                ],
            },
            "API-CALLS": {"unit_price": "0.05", "tiers": []},
        },
        "regions": {"EU": {"tax_pct": "20"}, "ZERO": {"tax_pct": "0"}},
    }
    document.update(overrides)
    return document


def load(document: dict[str, Any]) -> Pricebook:
    return load_pricebook(json.dumps(document))


def problems_of(document: dict[str, Any] | str) -> list[str]:
    text = document if isinstance(document, str) else json.dumps(document)
    with pytest.raises(PricebookError) as caught:
        load_pricebook(text)
    assert str(caught.value).count("\n") == len(caught.value.problems)  # one line per problem
    return caught.value.problems


# --- the sample ---------------------------------------------------------------------------


def test_sample_pricebook_loads_with_its_skus_regions_and_a_zero_tax_region() -> None:
    book = sample_pricebook()

    assert book.currency == "USD"
    assert len(book.skus) == 8
    assert set(book.regions) == {"US", "EU", "UK", "JP", "BR", "ZERO"}
    assert book.has_sku("SEAT-PRO")
    assert book.has_region("ZERO")
    assert book.tax_pct("ZERO") == 0
    assert book.tax_pct("US") == Decimal("8.875")
    assert book.unit_price_minor("SEAT-PRO") == 2999  # "29.99" USD = 2999 cents
    assert book.discount_pct_for("SEAT-PRO", 200) == Decimal("17.5")


# --- lookups ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "cents"),
    [("12.34", 1234), ("0.05", 5), ("12", 1200), ("12.340", 1234), ("0", 0), ("1E+2", 10000)],
)
def test_unit_prices_become_integer_cents(spelling: str, cents: int) -> None:
    skus = {"X": {"unit_price": spelling}}
    assert load(book_document(skus=skus)).unit_price_minor("X") == cents


def test_an_integer_unit_price_is_accepted_as_whole_currency_units() -> None:
    book = load(book_document(skus={"X": {"unit_price": 7}}))
    assert book.unit_price_minor("X") == 700  # 7 USD = 700 cents


@pytest.mark.parametrize(
    ("quantity", "pct"),
    [
        (1, Decimal(0)),  # below the first tier: no discount
        (9, Decimal(0)),  # one below the first boundary
        (10, Decimal(5)),  # exactly at the first boundary
        (49, Decimal(5)),  # one below the second boundary
        (50, Decimal("12.5")),  # exactly at the second boundary
        (1_000_000, Decimal("12.5")),  # far above the last tier
    ],
)
def test_discount_is_the_tier_with_the_largest_min_quantity_not_above(
    quantity: int, pct: Decimal
) -> None:
    assert load(book_document()).discount_pct_for("SEAT", quantity) == pct


def test_a_sku_without_tiers_has_no_discount() -> None:
    assert load(book_document()).discount_pct_for("API-CALLS", 1_000_000) == 0


def test_tiers_given_out_of_order_are_sorted() -> None:
    tiers = [
        {"min_quantity": 50, "discount_pct": "12.5"},
        {"min_quantity": 10, "discount_pct": "5"},
    ]
    book = load(book_document(skus={"SEAT": {"unit_price": "10", "tiers": tiers}}))

    assert [tier.min_quantity for tier in book.skus["SEAT"].tiers] == [10, 50]
    assert book.discount_pct_for("SEAT", 20) == 5


def test_unknown_codes_are_reported_by_name() -> None:
    book = load(book_document())

    assert not book.has_sku("NOPE")
    assert not book.has_region("MARS")
    with pytest.raises(KeyError, match="NOPE"):
        book.unit_price_minor("NOPE")
    with pytest.raises(KeyError, match="NOPE"):
        book.discount_pct_for("NOPE", 1)
    with pytest.raises(KeyError, match="MARS"):
        book.tax_pct("MARS")


@pytest.mark.parametrize(
    ("currency", "price", "minor"),
    [("JPY", "1200", 1200), ("KRW", "5000", 5000), ("BHD", "1.234", 1234), ("EUR", "1.2", 120)],
)
def test_the_currency_exponent_decides_the_minor_unit(
    currency: str, price: str, minor: int
) -> None:
    book = load(book_document(currency=currency, skus={"X": {"unit_price": price}}))
    assert book.unit_price_minor("X") == minor


# --- validation problems ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("skus", "expected_path", "expected_words"),
    [
        ({"X": {"unit_price": 12.34}}, "skus.X.unit_price", "floats lose cents"),
        ({"X": {"unit_price": "12.345"}}, "skus.X.unit_price", "minor unit (2 decimal places)"),
        ({"X": {"unit_price": "-1"}}, "skus.X.unit_price", "greater than or equal to 0"),
        ({"X": {"unit_price": "NaN"}}, "skus.X.unit_price", "finite"),
        ({"X": {"unit_price": "cheap"}}, "skus.X.unit_price", "decimal"),
        (
            {"X": {"unit_price": "1", "tiers": [{"min_quantity": 10, "discount_pct": "100.01"}]}},
            "skus.X.tiers[0].discount_pct",
            "less than or equal to 100",
        ),
        (
            {"X": {"unit_price": "1", "tiers": [{"min_quantity": 10, "discount_pct": 2.5}]}},
            "skus.X.tiers[0].discount_pct",
            "floats lose cents",
        ),
        (
            {"X": {"unit_price": "1", "tiers": [{"min_quantity": 0, "discount_pct": "1"}]}},
            "skus.X.tiers[0].min_quantity",
            "greater than or equal to 1",
        ),
        (
            {
                "X": {
                    "unit_price": "1",
                    "tiers": [
                        {"min_quantity": 10, "discount_pct": "5"},
                        {"min_quantity": 10, "discount_pct": "7"},
                    ],
                }
            },
            "skus.X.tiers",
            "duplicate min_quantity 10",
        ),
        ({"X": {"unit_price": "1", "colour": "red"}}, "skus.X.colour", "Extra inputs"),
        ({"bad sku!": {"unit_price": "1"}}, "skus.bad sku! (key)", "pattern"),
        ({}, "skus", "at least 1 item"),
    ],
)
def test_a_bad_sku_is_reported_at_its_json_path(
    skus: dict[str, Any], expected_path: str, expected_words: str
) -> None:
    problems = problems_of(book_document(skus=skus))

    assert len(problems) == 1, problems
    path, _, reason = problems[0].partition(": ")
    assert path == expected_path
    assert expected_words in reason


@pytest.mark.parametrize(
    ("overrides", "expected_problem_start"),
    [
        ({"currency": "usd"}, "currency: 'usd' is not an ISO 4217 code"),
        ({"currency": "US"}, "currency: 'US' is not an ISO 4217 code"),
        ({"currency": "ÄÖÜ"}, "currency: 'ÄÖÜ' is not an ISO 4217 code"),
        ({"regions": {}}, "regions: Dictionary should have at least 1 item"),
        ({"regions": {"EU": {"tax_pct": "101"}}}, "regions.EU.tax_pct: Input should be less"),
        ({"regions": {"EU": {"tax_pct": 19.6}}}, "regions.EU.tax_pct: got the JSON number 19.6"),
        ({"regions": {"EU": {"tax_pct": True}}}, "regions.EU.tax_pct: expected a decimal string"),
        ({"note": "hi"}, "note: Extra inputs are not permitted"),
    ],
)
def test_top_level_and_region_problems_name_their_path(
    overrides: dict[str, Any], expected_problem_start: str
) -> None:
    problems = problems_of(book_document(**overrides))
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected_problem_start)


def test_too_many_decimals_follows_the_currency() -> None:
    jpy = problems_of(book_document(currency="JPY", skus={"X": {"unit_price": "1200.5"}}))
    bhd = problems_of(book_document(currency="BHD", skus={"X": {"unit_price": "1.2345"}}))

    assert jpy == [
        "skus.X.unit_price: 1200.5 is finer than the currency's minor unit (0 decimal places)"
    ]
    assert bhd == [
        "skus.X.unit_price: 1.2345 is finer than the currency's minor unit (3 decimal places)"
    ]


def test_every_problem_of_a_document_is_listed_at_once() -> None:
    document = book_document(
        currency="usd",
        skus={
            "A": {"unit_price": 1.5},
            "B": {"unit_price": "1.234", "tiers": [{"min_quantity": 5, "discount_pct": "200"}]},
        },
        regions={"EU": {"tax_pct": "-1"}},
    )

    paths = [problem.partition(": ")[0] for problem in problems_of(document)]

    assert paths == [
        "currency",
        "skus.A.unit_price",
        "skus.B.tiers[0].discount_pct",
        "regions.EU.tax_pct",
    ]


def test_too_many_decimals_is_reported_together_with_other_problems() -> None:
    document = book_document(skus={"A": {"unit_price": "1.234"}, "B": {"unit_price": "-2"}})
    assert [p.partition(": ")[0] for p in problems_of(document)] == [
        "skus.A.unit_price",
        "skus.B.unit_price",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "(root): not valid JSON"),
        ("[]", "(root): Input should be a valid dictionary"),
        ('{"currency": "USD", "currency": "EUR"}', "(root): duplicate JSON key 'currency'"),
    ],
)
def test_a_document_that_is_not_a_pricebook_object_is_rejected(text: str, expected: str) -> None:
    problems = problems_of(text)
    assert len(problems) == 1
    assert problems[0].startswith(expected)


def test_invalid_utf8_is_rejected() -> None:
    with pytest.raises(PricebookError, match="not valid JSON"):
        load_pricebook(b'{"currency": "\xff"}')


def test_a_book_built_in_code_still_checks_prices_against_its_currency() -> None:
    with pytest.raises(ValidationError) as caught:
        Pricebook(
            currency="USD",
            skus={"A": SkuPrice(unit_price=Decimal("1.234")), "B": SkuPrice(unit_price=Decimal(1))},
            regions={"EU": RegionTax(tax_pct=Decimal(20))},
        )

    assert [error["loc"] for error in caught.value.errors()] == [("skus", "A", "unit_price")]


# --- canonical form and version hash -------------------------------------------------------


def test_version_hash_is_sha256_of_the_canonical_json() -> None:
    book = load(
        {
            "currency": "USD",
            "skus": {"B": {"unit_price": "1.5"}, "A": {"unit_price": "2", "tiers": []}},
            "regions": {"EU": {"tax_pct": "20.0"}},
        }
    )
    # Written by hand: keys sorted, no spaces, prices with the currency's two decimals,
    # percentages in their shortest spelling.
    expected = (
        b'{"currency":"USD","regions":{"EU":{"tax_pct":"20"}},'
        b'"skus":{"A":{"tiers":[],"unit_price":"2.00"},"B":{"tiers":[],"unit_price":"1.50"}}}'
    )

    assert book.to_json() == expected
    assert book.version_hash() == hashlib.sha256(expected).hexdigest()[:16]


def test_version_hash_ignores_key_order_whitespace_and_decimal_spelling() -> None:
    original = book_document()
    reordered = {
        "regions": dict(reversed(original["regions"].items())),
        "skus": {
            "API-CALLS": {"tiers": [], "unit_price": "0.050"},
            "SEAT": {
                "tiers": [
                    {"discount_pct": "12.50", "min_quantity": 50},
                    {"discount_pct": "5.0", "min_quantity": 10},
                ],
                "unit_price": "10",
            },
        },
        "currency": "USD",
    }
    spaced = json.dumps(reordered, indent=4)

    assert load_pricebook(spaced).version_hash() == load(original).version_hash()


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["skus"]["SEAT"].update(unit_price="10.01"),
        lambda d: d["skus"]["SEAT"]["tiers"][0].update(min_quantity=11),
        lambda d: d["skus"]["SEAT"]["tiers"][1].update(discount_pct="12.4"),
        lambda d: d["regions"]["EU"].update(tax_pct="19"),
        lambda d: d["regions"].update(UK={"tax_pct": "20"}),
        lambda d: d.update(currency="EUR"),
    ],
)
def test_version_hash_changes_with_any_priced_content(change: Any) -> None:
    changed = book_document()
    change(changed)
    assert load(changed).version_hash() != load(book_document()).version_hash()


def test_canonical_json_loads_back_to_the_same_book() -> None:
    book = sample_pricebook()
    again = load_pricebook(book.to_json())

    assert again == book
    assert again.to_json() == book.to_json()
    assert len(book.version_hash()) == 16
    assert int(book.version_hash(), 16) >= 0  # hexadecimal
