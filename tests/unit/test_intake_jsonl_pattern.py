"""The one-call check of a JSON Lines segment against the line-by-line one it stands in for.

``check_jsonl_by_pattern`` may decline any segment (None: "not sure"), but a segment it
accepts must be one ``check_lines`` accepts too, with the very same result: payload bytes,
totals, ids and lines. The near misses are where the ``json`` module and msgspec, or a
JSON value and the CSV line it is written back as, could part ways: quantities that are not
JSON integers or out of range, keys given twice or not at all, other keys (one holding an
integer the ``json`` module refuses), values with a comma, a line feed or a NUL, blank and
doubled lines, bytes that are not UTF-8. Each is tried in an otherwise good segment, and
mixed into generated ones. Clean segments of the usual kinds must take the fast path.
"""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.shapes import MATRIX, batch_body, pricebook_document
from initiator.intake.fields import KnownCodes
from initiator.intake.jsonl_pattern import check_jsonl_by_pattern
from initiator.intake.segment_types import Segment
from initiator.intake.segments import check_lines, check_segment
from shared.domain.pricebook import load_pricebook, sample_pricebook

BOOK = sample_pricebook()
GOOD = {
    "transaction_id": "tx-1",
    "customer_id": "cust-1",
    "sku": "SEAT-PRO",
    "quantity": 3,
    "region": "US",
    "occurred_at": "2025-01-22T10:20:30.250+01:00",
}
FIELDS = '"customer_id":"c-9","sku":"SEAT-PRO","region":"US","occurred_at":"2025-01-22T10:20:30Z"'


def _line(number: int, **changes: object) -> str:
    return json.dumps({**GOOD, "transaction_id": f"tx-{number}", **changes})


def _raw(quantity: str, transaction_id: str = '"tx-9"', extra: str = "") -> str:
    """A line spelled by hand, for what ``json.dumps`` would not write."""
    return f'{{"transaction_id":{transaction_id},{FIELDS},"quantity":{quantity}{extra}}}'


#: Lines both checks take, and so must the fast one.
CLEAN = {
    "plain": _line(9),
    "keys in another order": json.dumps(
        dict(reversed(list({**GOOD, "transaction_id": "tx-9"}.items())))
    ),
    "spaces around": "  " + _line(9) + "\t",
    "a key twice, the last good": _raw("3", extra=',"sku":"SEAT-PRO"').replace(
        '"sku":"SEAT-PRO"', '"sku":"NOPE"', 1
    ),
    "an escaped id": _raw("3", transaction_id='"tx\\u002d9"'),
    "the largest quantity": _raw("1000000"),
    "Z": _line(9, occurred_at="2025-01-22T10:20:30Z"),
}

#: Lines at least one check refuses or the fast one declines.
NEAR_MISSES = {
    **{f"quantity {q}": _raw(q) for q in ("0", "-1", "-0", "1000001", "5.0", "1e3", "true")},
    **{f"quantity {q}": _raw(q) for q in ('"5"', "null", "007", "NaN", str(10**30))},
    "a key twice, the last bad": _raw("3", extra=',"sku":"NOPE"'),
    "a missing key": json.dumps({k: v for k, v in GOOD.items() if k != "region"}),
    "another key": _line(9, note="n"),
    "another key, a huge integer": _raw("3", extra=',"n":' + "9" * 5000),
    "another key, nested deep": _raw("3", extra=',"n":' + "[" * 3000 + "]" * 3000),
    "an id with a comma": _line(9, transaction_id="tx,9"),
    "an id with a line feed": _line(9, transaction_id="tx\n9"),
    "an id holding a whole line": _line(
        9, transaction_id="tx-8,c-8,SEAT-PRO,1,US,2025-01-22T10:20:30Z\ntx-9"
    ),
    "an id with a NUL": _line(9, transaction_id="tx\x009"),
    **{
        f"a {field} of two good values": _line(9, **{field: f"{value}\n{value}"})
        for field, value in (
            ("transaction_id", "tx-9"),
            ("customer_id", "c-9"),
            ("sku", "SEAT-PRO"),
            ("region", "US"),
            ("occurred_at", "2025-01-22T10:20:30Z"),
        )
    },
    "a time ending in a carriage return": _line(9, occurred_at="2025-01-22T10:20:30Z\r"),
    "an id of 65": _line(9, transaction_id="x" * 65),
    "an empty id": _line(9, transaction_id=""),
    "a lone surrogate": _raw("3", transaction_id='"tx\\ud800"'),
    "an unknown SKU": _line(9, sku="NOPE"),
    "an unknown region": _line(9, region="XX"),
    "February 29 of 2025": _line(9, occurred_at="2025-02-29T00:00:00Z"),
    "no offset": _line(9, occurred_at="2025-01-22T10:20:30"),
    "the last year, a minute west": _line(9, occurred_at="9999-12-31T23:59:59-00:01"),
    "a duplicate id": _line(1),
    "a blank line": "",
    "a line of spaces": "   ",
    "two objects on a line": _line(9) + "," + _line(10),
    "two objects, no comma": _line(9) + " " + _line(10),
    "an array": json.dumps(list(GOOD.values())),
    "a trailing comma": _line(9)[:-1] + ",}",
    "a string, not an object": '"tx-9"',
}


def _segment(lines: list[str], *, crlf: bool = False, final_newline: bool = True) -> Segment:
    end = "\r\n" if crlf else "\n"
    text = end.join(lines) + (end if final_newline else "")
    return Segment(first_line=5, header=None, data=text.encode(), codes=KnownCodes.of(BOOK))


def _good_lines(count: int = 6) -> list[str]:
    return [_line(number) for number in range(1, count + 1)]


def _assert_held_together(segment: Segment) -> None:
    fast, slow = check_jsonl_by_pattern(segment), check_lines(segment)
    if slow is None:
        assert fast is None
    elif fast is not None:
        assert fast == slow


@pytest.mark.parametrize("line", CLEAN.values(), ids=CLEAN.keys())
@pytest.mark.parametrize("crlf", [False, True])
def test_a_clean_line_takes_the_fast_path_to_the_same_result(line: str, crlf: bool) -> None:
    lines = _good_lines()
    lines[3] = line
    segment = _segment(lines, crlf=crlf)
    fast = check_jsonl_by_pattern(segment)
    assert fast is not None
    assert fast == check_lines(segment)


@pytest.mark.parametrize("line", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_a_near_miss_is_declined_or_checked_alike(line: str) -> None:
    lines = _good_lines()
    lines[3] = line
    _assert_held_together(_segment(lines))


@pytest.mark.parametrize(
    "data",
    [b"\xff" + _line(9).encode() + b"\n", _line(9).encode() + b"\x00\n", b"\n\n"],
    ids=["not UTF-8", "a raw NUL", "blank lines only"],
)
def test_bytes_the_line_check_refuses_are_declined(data: bytes) -> None:
    segment = Segment(first_line=1, header=None, data=data, codes=KnownCodes.of(BOOK))
    assert check_lines(segment) is None
    assert check_jsonl_by_pattern(segment) is None


def test_a_last_line_without_its_newline() -> None:
    segment = _segment(_good_lines(), final_newline=False)
    fast = check_jsonl_by_pattern(segment)
    assert fast is not None
    assert fast == check_lines(segment)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(list(CLEAN.values())), st.sampled_from(list(NEAR_MISSES.values()))
        ),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
)
def test_generated_segments_are_declined_or_checked_alike(lines: list[str], crlf: bool) -> None:
    # Distinct ids, so that a clean mix is clean, except where a near miss repeats one.
    numbered = [line.replace('"tx-9"', f'"tx-{100 + n}"') for n, line in enumerate(lines)]
    _assert_held_together(_segment([*_good_lines(2), *numbered], crlf=crlf))


@pytest.mark.parametrize("name", ["jsonl", "everything"])
def test_the_benchmarks_json_lines_take_the_fast_path(name: str) -> None:
    shape = MATRIX[name].resized(2_000)
    body = batch_body(shape)
    data = gzip.decompress(body) if shape.gzip else body
    codes = KnownCodes.of(load_pricebook(pricebook_document(shape)))
    segment = Segment(first_line=1, header=None, data=data, codes=codes)
    fast = check_jsonl_by_pattern(segment)
    assert fast is not None
    assert fast.transactions == 2_000
    assert fast == check_lines(segment)
    assert check_segment(segment) == fast


@pytest.mark.parametrize("field", ["transaction_id", "customer_id", "sku", "region", "occurred_at"])
def test_a_value_of_two_good_values_is_declined(field: str) -> None:
    # Each column is matched as its values joined by line feeds: a value holding one must
    # not pass as two values.
    value = {**GOOD, "transaction_id": "tx-9"}[field]
    lines = [*_good_lines(), _line(9, **{field: f"{value}\n{value}"})]
    assert check_jsonl_by_pattern(_segment(lines)) is None
