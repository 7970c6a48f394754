"""A clean CSV segment checked a column at a time (pyarrow): the intake's common case.

The line-by-line check (:func:`~initiator.intake.segments.check_segment`) puts every line
through the serial reader's own code: the ``csv`` module, a
:class:`~initiator.intake.fields.TransactionValidator` call and a
:class:`~shared.domain.transactions.Transaction` per line, and msgspec to encode the rows.
That costs 7-9 µs a line, and a 200,000-line batch kept both cores busy for its first
second on that alone (bench/README.md, "Issue 12, session 15"). In a segment without a
double quote (the helpers take no other) every rule of a line is a rule about one column,
so pyarrow's CSV reader and compute kernels, in C++, check the whole segment at once and
join its rows into the payload's JSON: about a third of the time.

It answers "clean, and here is the segment" or None: "not sure". It is strict in one
direction only. Whatever it cannot vouch for (a blank line, a lone CR, a NUL byte, a
quantity of ``0``, a first or last year, a date-time fromisoformat would refuse, a
duplicate) it leaves to the line-by-line check, which decides exactly as before; for a
bad line the serial reader then says what and where. So it must never accept a segment
the line-by-line check refuses, and where both accept, it must give the very same
:class:`~initiator.intake.segment_types.CheckedSegment` (the same payload bytes, totals,
ids and lines): ``tests/unit/test_intake_columns.py`` holds the two together on generated
segments, good and bad.

The rules, as the line-by-line check has them (``initiator/intake/fields.py``):

* the header names the six required columns once each; every line has as many fields;
* ids are 1-64 characters of :data:`~initiator.intake.fields.ID_ALPHABET`; a SKU and a
  region are codes of the pricebook; a quantity is 1 to 1,000,000 in plain ASCII digits;
* ``occurred_at`` has the RFC 3339 shape with an offset and is a real date-time
  (``datetime.fromisoformat``) whose UTC instant the warehouse can store;
* no transaction id appears twice (across segments the caller checks);
* a field is at most ``csv.field_size_limit()`` long (the ``csv`` module refuses longer).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from initiator.intake.fields import (
    ID_PATTERN,
    MAX_QUANTITY,
    MAX_QUANTITY_DIGITS,
    REQUIRED_FIELDS,
    TIMESTAMP_PATTERN,
)
from initiator.intake.header import required_columns
from initiator.intake.problems import ProblemCollector
from initiator.intake.segment_types import CheckedSegment, Segment
from shared.domain.transactions import id_checksum_of

_IS_ID = f"^{ID_PATTERN}$"
_IS_DIGITS = f"^[0-9]{{1,{MAX_QUANTITY_DIGITS}}}$"
_IS_TIMESTAMP = f"^{TIMESTAMP_PATTERN}$"
#: ``storable`` is only in doubt in the first and the last year (fields._EDGE_YEARS).
_SURE_YEARS = (2, 9998)
#: The characters that would make the ``csv`` module read a line differently from
#: pyarrow with quoting off: a quote, a CR other than a CRLF's (counted apart), a NUL.
_QUOTE, _CR, _CRLF, _NUL = b'"', b"\r", b"\r\n", b"\x00"

_PARSE = pa_csv.ParseOptions(
    delimiter=",", quote_char=False, escape_char=False, ignore_empty_lines=False
)


def check_columns(segment: Segment) -> CheckedSegment | None:
    """``segment`` checked and encoded column by column if it is clean for sure, else None."""
    header, data = segment.header, segment.data
    if header is None or not data or not _plain_bytes(header) or not _plain_bytes(data):
        return None
    layout = _header_layout(header)
    if layout is None:
        return None
    positions, width = layout
    table = _read(data, width)
    if table is None or table.num_rows != data.count(b"\n") + (not data.endswith(b"\n")):
        return None  # a blank line: the line-by-line check skips and counts it
    columns = [table.column(index).combine_chunks() for index in range(width)]
    transaction_id, customer_id, sku, quantity_text, region, occurred_at = (
        columns[index] for index in positions
    )
    others = [column for index, column in enumerate(columns) if index not in positions]
    codes = segment.codes
    if not (
        _every(pc.match_substring_regex(transaction_id, _IS_ID))
        and _every(pc.match_substring_regex(customer_id, _IS_ID))
        and _every(pc.is_in(sku, value_set=_code_set(codes.skus)))
        and _every(pc.is_in(region, value_set=_code_set(codes.regions)))
        and _every(pc.match_substring_regex(quantity_text, _IS_DIGITS))
        and _every(pc.match_substring_regex(occurred_at, _IS_TIMESTAMP))
        and _fields_within_csv_limit(others)
    ):
        return None
    quantity = pc.cast(quantity_text, pa.int64())
    if pc.min(quantity).as_py() < 1 or pc.max(quantity).as_py() > MAX_QUANTITY:
        return None
    if not _real_storable_instants(occurred_at):
        return None
    count = table.num_rows
    if pc.count_distinct(transaction_id).as_py() != count:
        return None
    first = segment.first_line
    lines = range(first, first + count)
    ids: list[str] = transaction_id.to_pylist()
    return CheckedSegment(
        rows_json=_rows_json(
            lines, transaction_id, customer_id, sku, quantity, region, occurred_at
        ),
        first_line=first,
        last_line=first + count - 1,
        transactions=count,
        quantity=pc.sum(quantity).as_py(),
        id_checksum=id_checksum_of(ids),
        transaction_ids=ids,
        lines=list(lines),
    )


def _plain_bytes(data: bytes) -> bool:
    return _QUOTE not in data and _NUL not in data and data.count(_CR) == data.count(_CRLF)


def _header_layout(header: bytes) -> tuple[list[int], int] | None:
    """The required columns' positions and the header's width, as the reader finds them."""
    try:
        text = header.decode("utf-8")
    except UnicodeDecodeError:
        return None
    names = next(csv.reader([text]), None)
    if not names:
        return None
    problems = ProblemCollector(1, field_order=REQUIRED_FIELDS)
    positions = required_columns(names, 1, problems)
    if positions is None or problems.found:
        return None
    return positions, len(names)


def _read(data: bytes, width: int) -> pa.Table | None:
    """The segment's lines as ``width`` string columns; None if a line does not have
    ``width`` fields or is not UTF-8."""
    names = [str(index) for index in range(width)]
    try:
        return pa_csv.read_csv(
            pa.py_buffer(data),
            read_options=pa_csv.ReadOptions(
                column_names=names,
                use_threads=False,  # a helper is one process a core already
                block_size=max(len(data), 1 << 20),  # one block: a line may not straddle two
            ),
            parse_options=_PARSE,
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid:
        return None


def _every(flags: pa.Array) -> bool:
    return pc.all(flags).as_py() is True


def _code_set(codes: Mapping[str, object]) -> pa.Array:
    return pa.array(list(codes), pa.string())


def _fields_within_csv_limit(columns: Iterable[pa.Array]) -> bool:
    """The columns no rule bounds: ``csv`` refuses a field longer than its limit (in
    characters; bytes are at least as many)."""
    limit = csv.field_size_limit()
    return all(pc.max(pc.binary_length(column)).as_py() <= limit for column in columns)


def _real_storable_instants(occurred_at: pa.Array) -> bool:
    """Whether ``datetime.fromisoformat`` reads every (well-shaped) value and its UTC
    instant is storable, for sure: a real day, hours, minutes and seconds in range, an
    offset under 24 hours, a year away from the ends."""
    try:
        days = pc.cast(pc.utf8_slice_codeunits(occurred_at, 0, 10), pa.date32())
    except pa.ArrowInvalid:
        return False  # not a day of the calendar (February 30)
    years = pc.year(days)
    if pc.min(years).as_py() < _SURE_YEARS[0] or pc.max(years).as_py() > _SURE_YEARS[1]:
        return False
    within = [
        _at_most(occurred_at, 11, 23),  # hours
        _at_most(occurred_at, 14, 59),  # minutes
        _at_most(occurred_at, 17, 59),  # seconds
    ]
    offsets = pc.filter(occurred_at, pc.invert(pc.ends_with(occurred_at, "Z")))
    if len(offsets):
        within += [_at_most(offsets, -5, 23), _at_most(offsets, -2, 59)]  # +hh:mm
    return all(within)


def _at_most(values: pa.Array, start: int, highest: int) -> bool:
    """Whether the two digits at ``start`` (from the end when negative) are at most
    ``highest`` in every value."""
    stop = start + 2 if start + 2 != 0 else None
    digits = pc.utf8_slice_codeunits(values, start, stop)
    greatest: int = pc.max(pc.cast(digits, pa.int8())).as_py()
    return greatest <= highest


def _rows_json(
    lines: range,
    transaction_id: pa.Array,
    customer_id: pa.Array,
    sku: pa.Array,
    quantity: pa.Array,
    region: pa.Array,
    occurred_at: pa.Array,
) -> bytes:
    """The rows as :func:`~shared.contracts.chunk_payload.rows_json` writes them, joined
    in C++: ``[line,"transaction_id","customer_id","sku",quantity,"region","occurred_at"]``.

    Nothing needs escaping: ids and codes are of the id alphabet, a timestamp of digits and
    ``-:.TZ+``, and every number is written from its integer (``007`` is ``7``)."""
    numbers = pc.cast(pa.array(lines, pa.int64()), pa.string())
    rows = pc.binary_join_element_wise(
        "[",
        numbers,
        ',"',
        transaction_id,
        '","',
        customer_id,
        '","',
        sku,
        '",',
        pc.cast(quantity, pa.string()),
        ',"',
        region,
        '","',
        occurred_at,
        '"]',
        "",  # the separator between the parts of a row: none
    )
    in_one = pa.ListArray.from_arrays(pa.array([0, len(rows)], pa.int32()), rows)
    joined: bytes = pc.binary_join(in_one, ",")[0].as_py().encode()
    return b"[" + joined + b"]"
