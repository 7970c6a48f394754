"""The integer rater gives exactly the Decimal rater's figures (a property test), and rows.

The Decimal rater (:mod:`processor.rating`) is the reference, checked against figures worked
out by hand in ``test_rating.py``. Here Hypothesis draws random pricebooks (currencies with
0, 2 and 3 decimals, prices up to 18 digits, percentages with up to 9 decimals such as
8.25 or 12.5, tiers) and random transactions (quantities from 1 to 1,000,000, the limits
drawn often), and every figure of every transaction must be equal.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from processor.integer_rater import IntegerRater, percent_ratio, round_half_even_share
from processor.rating import Rater
from shared.domain.charges import invoice_sums_of, subtotals
from shared.domain.money import EXACT, format_minor_units, format_plain_decimal, minor_exponent
from shared.domain.pricebook import Pricebook, load_pricebook, sample_pricebook
from shared.domain.transactions import Transaction
from shared.domain.utc_text import utc_text, utc_text_of
from tests.unit.test_rating import USD_BOOK

MAX_QUANTITY = 1_000_000
WHEN = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)

quantities = st.one_of(
    st.sampled_from([1, 2, 9, 10, 49, 50, 999_999, MAX_QUANTITY]),
    st.integers(1, MAX_QUANTITY),
)


@st.composite
def percentages(draw: st.DrawFn) -> Decimal:
    """0 to 100 with up to 9 decimals (the book allows 12 digits in all)."""
    places = draw(st.integers(0, 9))
    scaled = draw(
        st.one_of(st.integers(0, 100 * 10**places), st.sampled_from([0, 100 * 10**places]))
    )
    return Decimal(scaled).scaleb(-places)


@st.composite
def pricebooks(draw: st.DrawFn) -> Pricebook:
    currency = draw(st.sampled_from(["USD", "JPY", "KWD"]))
    exponent = minor_exponent(currency)
    prices = st.one_of(st.integers(0, 10**18 - 1), st.sampled_from([0, 1, 5, 25, 10**18 - 1]))
    skus: dict[str, Any] = {}
    for index in range(draw(st.integers(1, 4))):
        thresholds = draw(st.lists(quantities, max_size=4, unique=True))
        skus[f"SKU-{index}"] = {
            "unit_price": format_minor_units(draw(prices), exponent),
            "tiers": [
                {"min_quantity": q, "discount_pct": format_plain_decimal(draw(percentages()))}
                for q in thresholds
            ],
        }
    regions = {
        f"R-{index}": {"tax_pct": format_plain_decimal(draw(percentages()))}
        for index in range(draw(st.integers(1, 3)))
    }
    document = {"currency": currency, "skus": skus, "regions": regions}
    return load_pricebook(json.dumps(document))


@st.composite
def books_and_transactions(draw: st.DrawFn) -> tuple[Pricebook, list[Transaction]]:
    book = draw(pricebooks())
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(sorted(book.skus)),
                st.sampled_from(sorted(book.regions)),
                quantities,
                st.integers(0, 3),
            ),
            min_size=1,
            max_size=30,
        )
    )
    transactions = [
        Transaction(f"T-{i}", f"C-{customer}", sku, quantity, region, WHEN)
        for i, (sku, region, quantity, customer) in enumerate(rows)
    ]
    return book, transactions


def when(transaction: Transaction) -> str:
    return transaction.occurred_at.isoformat()


def payload_rows(transactions: list[Transaction]) -> list[list[Any]]:
    """The rows a chunk payload decodes to (``shared.contracts.chunk_payload.COLUMNS``)."""
    return [
        [
            line,
            t.transaction_id,
            t.customer_id,
            t.sku,
            t.quantity,
            t.region,
            when(t),
        ]
        for line, t in enumerate(transactions, start=2)
    ]


@settings(max_examples=300, deadline=None)
@given(books_and_transactions())
def test_every_figure_equals_the_decimal_raters(case: tuple[Pricebook, list[Transaction]]) -> None:
    book, transactions = case
    reference, integer = Rater(book), IntegerRater(book)
    for t in transactions:
        charge = reference.rate(t)
        expected = (
            charge.unit_price,
            charge.gross,
            charge.discount,
            charge.net,
            charge.tax,
            charge.total,
        )
        assert integer.figures(t.sku, t.region, t.quantity) == expected, t


@settings(max_examples=150, deadline=None)
@given(books_and_transactions())
def test_rows_and_invoice_sums_equal_the_decimal_raters(
    case: tuple[Pricebook, list[Transaction]],
) -> None:
    book, transactions = case
    reference = [Rater(book).rate(t) for t in transactions]
    rows, sums = IntegerRater(book).rate_rows(payload_rows(transactions))

    assert rows == [
        (
            utc_text(t.occurred_at),
            c.transaction_id,
            c.customer_id,
            c.sku,
            c.region,
            c.quantity,
            c.unit_price,
            c.gross,
            c.discount,
            c.net,
            c.tax,
            c.total,
        )
        for t, c in zip(transactions, reference, strict=True)
    ]
    assert tuple(sums) == invoice_sums_of(subtotals(reference).values())


@given(
    amount=st.integers(-(10**30), 10**30),
    pct=percentages(),
)
@example(amount=250, pct=Decimal(5))  # 12.5 -> 12
@example(amount=270, pct=Decimal(5))  # 13.5 -> 14
@example(amount=-250, pct=Decimal(5))  # -12.5 -> -12
def test_the_share_is_decimal_round_half_even(amount: int, pct: Decimal) -> None:
    exact_product = EXACT.multiply(Decimal(amount), pct.scaleb(-2, context=EXACT))
    expected = exact_product.to_integral_value(ROUND_HALF_EVEN)
    assert round_half_even_share(amount, percent_ratio(pct)) == int(expected)


def test_percent_ratio_is_exact() -> None:
    assert percent_ratio(Decimal("8.25")) == (33, 400)
    assert percent_ratio(Decimal("12.5")) == (1, 8)
    assert percent_ratio(Decimal("0")) == (0, 1)
    assert percent_ratio(Decimal("100")) == (1, 1)


def test_the_hand_worked_ties_of_the_decimal_tests() -> None:
    rater = IntegerRater(load_pricebook(json.dumps(USD_BOOK)))
    assert rater.figures("TIE-DOWN", "TEN", 10) == (25, 250, 12, 238, 24, 262)
    assert rater.figures("TIE-UP", "TEN", 10) == (27, 270, 14, 256, 26, 282)
    assert rater.figures("PLAIN-400", "US", 1) == (400, 400, 0, 400, 36, 436)
    assert rater.figures("PLAIN-1200", "US", 1) == (1200, 1200, 0, 1200, 106, 1306)


def test_unknown_codes_and_bad_quantities_are_named() -> None:
    rater = IntegerRater(sample_pricebook())
    sku, region = next(iter(sample_pricebook().skus)), next(iter(sample_pricebook().regions))
    with pytest.raises(KeyError, match="unknown sku 'NOPE'"):
        rater.rate_rows([[2, "T", "C", "NOPE", 1, region, "2024-06-01T12:00:00Z"]])
    with pytest.raises(KeyError, match="unknown region 'NOWHERE'"):
        rater.rate_rows([[2, "T", "C", sku, 1, "NOWHERE", "2024-06-01T12:00:00Z"]])
    with pytest.raises(TypeError, match="line 7: quantity '3' is not an integer"):
        rater.rate_rows([[7, "T", "C", sku, "3", region, "2024-06-01T12:00:00Z"]])


#: Neighbours that share an instant or only part of it: the rater reuses the last row's
#: respelling, so each must still be its own text's.
TRICKY_INSTANTS = [
    "2025-01-15T05:30:00+05:30",
    "2025-01-15T05:30:00+05:30",
    "2025-01-15T05:30:01+05:30",
    "2025-01-15T05:30:00+05:30",  # back to an earlier one, not the last
    "2025-01-15T00:00:00Z",  # the same instant in another spelling
    "2025-01-15T00:00:00+00:00",
    "2025-01-15T00:00:00.5Z",
    "2025-01-15T00:00:00.500000Z",
    "2025-01-15T00:00:00.123456789-02:30",
    "2025-01-15T00:00:00.123456789-02:30",
    "2025-01-14T23:59:59.999999-00:01",
    "2025-03-01T00:29:59+05:30",  # the day before is February's last
    "2024-03-01T00:29:59+05:30",  # ... of a leap year
    "2024-03-01T00:29:59+05:30",
]


def test_each_rows_instant_is_its_own_texts_when_neighbours_repeat() -> None:
    rater = IntegerRater(sample_pricebook())
    sku, region = next(iter(sample_pricebook().skus)), next(iter(sample_pricebook().regions))
    rows = [[n, f"T{n}", "C", sku, 1, region, at] for n, at in enumerate(TRICKY_INSTANTS)]
    results, _ = rater.rate_rows(rows)
    assert [row[0] for row in results] == [utc_text_of(at) for at in TRICKY_INSTANTS]
    assert [row[0] for row in results][:4] == [
        "2025-01-15 00:00:00.000000",
        "2025-01-15 00:00:00.000000",
        "2025-01-15 00:00:01.000000",
        "2025-01-15 00:00:00.000000",
    ]


def test_an_empty_instant_after_a_good_one_is_refused() -> None:
    rater = IntegerRater(sample_pricebook())
    sku, region = next(iter(sample_pricebook().skus)), next(iter(sample_pricebook().regions))
    good = "2024-06-01T12:00:00+02:00"
    with pytest.raises(ValueError, match="isoformat"):
        rater.rate_rows([[2, "T1", "C", sku, 1, region, good], [3, "T2", "C", sku, 1, region, ""]])
