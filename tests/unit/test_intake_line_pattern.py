"""The line pattern's check of a CSV segment against the line-by-line one it stands in for.

``check_by_pattern`` may decline any segment (None: "not sure"), but a segment it accepts must
be one ``check_lines`` accepts too, with the very same result: payload bytes, totals, ids
and lines. The near misses each rule exists for (a 65-character id, a quantity of ``0`` or
``007``, February 29 of a common year, an offset of ``+24:00``, the first and last year, a
blank line, a lone CR, a NUL, a field past the ``csv`` module's limit, a duplicate id) are
tried one at a time in an otherwise good segment, and mixed into generated ones. Another
property holds that it does take clean segments of the usual kind, so the fast path is the
one that runs.
"""

from __future__ import annotations

import csv
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from initiator.intake.fields import REQUIRED_FIELDS
from initiator.intake.line_pattern import check_by_pattern
from initiator.intake.segment_types import Segment
from initiator.intake.segments import check_lines, check_segment
from shared.domain.pricebook import sample_pricebook

BOOK = sample_pricebook()
SKUS = list(BOOK.skus)
REGIONS = list(BOOK.regions)
COLUMNS = [*REQUIRED_FIELDS, "note"]  # "note": a column no rule reads
GOOD_ROW = {
    "transaction_id": "tx-1",
    "customer_id": "cust-1",
    "sku": "SEAT-PRO",
    "quantity": "3",
    "region": "US",
    "occurred_at": "2025-01-22T10:20:30.250+01:00",
    "note": "n",
}

#: The good instant of GOOD_ROW in parts, and what each part is tried as instead.
_INSTANT_PARTS = ("2025", "01", "22", "10", "20", "30", ".250", "+01:00")
_INSTANT_VARIANTS = (
    ("0000", "0001", "0002", "2024", "9998", "9999", "99999", "20a5"),
    ("00", "02", "12", "13", "1"),
    ("00", "28", "29", "30", "31", "32"),
    ("00", "23", "24", "99"),
    ("00", "59", "60"),
    ("00", "59", "60", "61"),
    ("", ".", ".5", ".12345678", ".123456789", ".1234567890", ",5"),
    (
        *("Z", "z", "", "+00:00", "-00:00", "+23:59", "-23:59", "+24:00", "-24:00"),
        *("+23:60", "+22:60", "+00:99", "+0530", "+05", "+5:30"),
    ),
)


def _instants() -> list[str]:
    """The good instant with one part changed at a time, and some whole ones."""
    found = []
    for position, variants in enumerate(_INSTANT_VARIANTS):
        for variant in variants:
            parts = list(_INSTANT_PARTS)
            parts[position] = variant
            year, month, day, hour, minute, second, fraction, offset = parts
            found.append(f"{year}-{month}-{day}T{hour}:{minute}:{second}{fraction}{offset}")
    return [
        *found,
        "2024-02-29T00:00:00Z",
        "2025-02-29T00:00:00Z",
        "2100-02-29T00:00:00Z",
        "2000-02-29T00:00:00Z",
        "0001-01-01T00:00:00+00:01",
        "9999-12-31T23:59:59-00:01",
    ]


_IDS = ["", "a b", "a/b", "é", "x" * 64, "x" * 65]
NEAR_MISSES: dict[str, list[str]] = {
    "transaction_id": _IDS,
    "customer_id": _IDS,
    "sku": ["seat-pro", "SEAT-PRO ", "", "NOPE"],
    "region": ["us", "", "XX"],
    "quantity": [
        *("0", "00", "007", "0000001", "1000000", "1000001", "", "-1", "+5", " 5"),
        *("5.0", "1e3", "\uff11", "12345678"),  # \uff11: a full-width one, isdigit
    ],
    "occurred_at": _instants(),
    "note": [
        "x" * (csv.field_size_limit() + 1),
        "x" * csv.field_size_limit(),
        "a\x00b",
        "a\rb",
        "\ufeff",
    ],
}


def _segment(rows: list[dict[str, str]], *, newline: str = "\n", first_line: int = 7) -> Segment:
    text = "".join(",".join(row[name] for name in COLUMNS) + newline for row in rows)
    header = ",".join(COLUMNS) + newline
    return Segment(first_line, header.encode(), text.encode(), BOOK)


def _good_rows(count: int) -> list[dict[str, str]]:
    return [dict(GOOD_ROW, transaction_id=f"tx-{number}") for number in range(count)]


def _assert_the_line_checks_answer(segment: Segment) -> None:
    by_pattern = check_by_pattern(segment)
    if by_pattern is not None:
        assert by_pattern == check_lines(segment)
    else:
        assert check_segment(segment) == check_lines(segment)


@pytest.mark.parametrize(
    ("field", "value"),
    [(field, value) for field, values in NEAR_MISSES.items() for value in values],
    ids=repr,
)
def test_a_near_miss_alone_gets_the_line_checks_answer(field: str, value: str) -> None:
    rows = _good_rows(3)
    rows[1][field] = value
    _assert_the_line_checks_answer(_segment(rows))


DAMAGE: list[Callable[[bytes], bytes]] = [
    lambda text: b"\n" + text,  # a blank line first
    lambda text: text.replace(b"\n", b"\n\n", 1),  # a blank line inside
    lambda text: text.replace(b"\n", b"\n  \n", 1),  # a line of spaces
    lambda text: text.replace(b"\n", b"\r\n"),  # CRLF throughout: fine
    lambda text: text.replace(b"\n", b"\r", 1),  # a lone CR
    lambda text: text.replace(b",n\n", b",n,extra\n", 1),  # a field too many
    lambda text: text.replace(b",n\n", b"\n", 1),  # a field too few
    lambda text: text.replace(b"tx-2", b"tx-0"),  # a duplicate id
    lambda text: text + b"tx-9,cust-1,SEAT-PRO,3,US,2025-01-22T10:20:30Z,n",  # no final LF
    lambda text: text.replace(b"cust-1", b"cust-\xff", 1),  # not UTF-8
]


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_bytes_get_the_line_checks_answer(damage: Callable[[bytes], bytes]) -> None:
    good = _segment(_good_rows(3))
    _assert_the_line_checks_answer(Segment(good.first_line, good.header, damage(good.data), BOOK))


def _two_digits(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda value: f"{value:02d}")


@st.composite
def _good_instants(draw: st.DrawFn) -> str:
    year = f"{draw(st.integers(2, 9998)):04d}"
    month, day = draw(_two_digits(1, 12)), draw(_two_digits(1, 28))
    hour = draw(_two_digits(0, 23))
    minute, second = draw(_two_digits(0, 59)), draw(_two_digits(0, 59))
    fraction = draw(st.sampled_from(["", ".5", ".250", ".123456", ".123456789"]))
    offset = draw(st.sampled_from(["Z", "+00:00", "+05:30", "-23:59", "+23:59"]))
    return f"{year}-{month}-{day}T{hour}:{minute}:{second}{fraction}{offset}"


_GOOD_VALUES = {
    "customer_id": st.text("abcXYZ0189_.:-", min_size=1, max_size=64),
    "sku": st.sampled_from(SKUS),
    "quantity": st.integers(1, 1_000_000).map(str),
    "region": st.sampled_from(REGIONS),
    "occurred_at": _good_instants(),
    "note": st.sampled_from(["", "plain", "ünïcode ✓", "tab\there"]),
}


@st.composite
def segments(draw: st.DrawFn, *, near_misses: bool) -> Segment:
    """Good lines in any column order; with ``near_misses``, up to two put in."""
    count = draw(st.integers(1, 30))
    ids = draw(st.lists(_GOOD_VALUES["customer_id"], min_size=count, max_size=count, unique=True))
    rows = [
        {
            "transaction_id": transaction_id,
            **{name: draw(values) for name, values in _GOOD_VALUES.items()},
        }
        for transaction_id in ids
    ]
    if near_misses:
        for _ in range(draw(st.integers(0, 2))):
            field = draw(st.sampled_from(list(NEAR_MISSES)))
            rows[draw(st.integers(0, count - 1))][field] = draw(st.sampled_from(NEAR_MISSES[field]))
    order = draw(st.permutations(COLUMNS))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = "".join(",".join(row[name] for name in order) + newline for row in rows)
    if not draw(st.booleans()):
        text = text.removesuffix(newline)  # a last line without its newline
    first_line = draw(st.integers(2, 10_000))
    return Segment(first_line, (",".join(order) + newline).encode(), text.encode(), BOOK)


@settings(max_examples=250, deadline=None)
@given(segments(near_misses=True))
def test_the_pattern_accepts_only_what_the_line_check_accepts(segment: Segment) -> None:
    by_pattern = check_by_pattern(segment)
    if by_pattern is not None:
        assert check_lines(segment) == by_pattern


@settings(max_examples=120, deadline=None)
@given(segments(near_misses=False))
def test_the_pattern_takes_clean_segments(segment: Segment) -> None:
    by_pattern = check_by_pattern(segment)
    assert by_pattern is not None
    assert by_pattern == check_lines(segment)


def test_a_segment_the_pattern_declines_is_still_checked_line_by_line() -> None:
    rows = _good_rows(2)
    rows[1]["quantity"] = "007"  # the line check reads it as 7
    segment = _segment(rows)
    blank_first = Segment(segment.first_line, segment.header, b"\n" + segment.data, BOOK)
    assert check_by_pattern(blank_first) is None  # only the line check counts blank lines
    checked = check_segment(blank_first)
    assert checked is not None
    assert checked == check_lines(blank_first)
    assert checked.lines == [8, 9]
    assert b',7,"US"' in checked.rows_json
