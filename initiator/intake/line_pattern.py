"""A clean CSV segment checked by one regular expression: the intake's common case.

The line-by-line check (:func:`~initiator.intake.segments.check_lines`) puts every line
through the serial reader's own code: the ``csv`` module, a
:class:`~initiator.intake.fields.TransactionValidator` call and a
:class:`~shared.domain.transactions.Transaction` per line, and msgspec to encode the rows,
which keeps both cores busy for the first second of a large batch. In a segment without a
double quote (the helpers take no other) nearly every rule of a line is a rule about the
characters of one field, so one pattern, built once per header, spells out every good
line, and ``findall``
checks and splits the whole segment in C; what is left (no id twice, codes the pricebook
has) is a set of a column at once. The rows are
then written into the payload's JSON by ``str.format`` mapped over the columns, again
with no Python code per line: about half the CPU of the line-by-line check
(``bench.intake``), a third of it the ids' blake2b hashes that the control totals need
either way.

pyarrow parses faster still, but adds ~60 MB to each process that imports it, the initiator
and each helper (decision 0005).

The pattern answers "clean, and here is the segment" or None: "not sure". It is strict in
one direction only: it leaves to the line-by-line check, which decides exactly as before,
whatever it does not spell out (a blank line, a lone CR, a NUL, a quantity written ``007``,
the first or last year, February 29, an offset spelled ``+00:99``, a duplicate). So it
must never accept a segment the line-by-line check refuses, and where both accept it
must give the very same :class:`~initiator.intake.segment_types.CheckedSegment` (the same
payload bytes, totals, ids and lines): ``tests/unit/test_intake_line_pattern.py`` holds
the two together on every near miss alone and on generated segments.

What a good line is, as ``initiator/intake/fields.py`` has it: the header's width of
fields; ids of 1-64 characters of the id alphabet; a SKU and a region of the pricebook
(codes of that alphabet, looked up a column at a time); a
quantity of 1 to 1,000,000 in ASCII digits; an RFC 3339 date-time with an offset that
``datetime.fromisoformat`` reads and whose UTC instant the warehouse stores; any other
field within ``csv.field_size_limit()``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from functools import lru_cache
from itertools import starmap
from typing import Any

from initiator.intake.fields import ID_PATTERN, REQUIRED_FIELDS
from initiator.intake.header import required_columns
from initiator.intake.lines import line_count
from initiator.intake.problems import ProblemCollector
from initiator.intake.segment_types import CheckedSegment, Segment
from shared.domain.transactions import id_checksum_of

# The values spelled out, each a subset of what the line-by-line check accepts.
_QUANTITY = "[1-9][0-9]{0,5}|1000000"  # 1 to 1,000,000, no leading zero
_YEAR = "000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8]"
"""Years 2 to 9998: only in the first and the last year can an instant leave the range
the warehouse stores once converted to UTC (``fields.storable``)."""
_MONTH_DAY = (
    "(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"  # days every month has
    "|(?:0[13-9]|1[0-2])-(?:29|30)"  # not February (its 29th depends on the year)
    "|(?:0[13578]|1[02])-31"
)
_TIME = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?"
_OFFSET = "Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]"  # under 24 hours, as fromisoformat wants
_INSTANT = f"(?:{_YEAR})-(?:{_MONTH_DAY})T{_TIME}(?:{_OFFSET})"
#: The patterns of a field's value that the line pattern spells out, by field name.
VALUE_PATTERNS = {
    "transaction_id": ID_PATTERN,
    "customer_id": ID_PATTERN,
    "sku": ID_PATTERN,
    "quantity": _QUANTITY,
    "region": ID_PATTERN,
    "occurred_at": _INSTANT,
}

#: One payload row, the same bytes as msgspec writes for ``[line, transaction_id,
#: customer_id, sku, quantity, region, occurred_at]``: nothing in a matched field needs
#: escaping (the id alphabet, digits, ``-:.TZ+``) and a matched quantity is its integer.
_PAYLOAD_ROW = '[{},"{}","{}","{}",{},"{}","{}"]'.format


def check_by_pattern(segment: Segment) -> CheckedSegment | None:
    """``segment`` checked and encoded if the pattern vouches for every line, else None."""
    if segment.header is None or not segment.data:
        return None
    try:
        header, text = segment.header.decode("utf-8"), segment.data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    layout = _header_layout(header)
    if layout is None:
        return None
    pattern, groups = _line_pattern(layout)
    matches = pattern.findall(text)
    count = len(matches)
    if count != line_count(text):
        return None  # a line the pattern does not vouch for, or a blank one
    by_position = list(zip(*matches, strict=True))
    transaction_id, customer_id, sku, quantity, region, occurred_at = (
        by_position[groups.index(field)] for field in range(len(REQUIRED_FIELDS))
    )
    columns = (transaction_id, customer_id, sku, quantity, region, occurred_at)
    return checked_columns(segment, columns, sum(map(int, quantity)))


Column = Sequence[Any]


def checked_columns(
    segment: Segment, columns: tuple[Column, ...], quantity: int
) -> CheckedSegment | None:
    """The segment of ``columns``, the values of its lines in :data:`REQUIRED_FIELDS` order
    (each value checked for its field), and their ``quantity`` sum; None for a duplicate id
    or a code the pricebook lacks, which the line-by-line check words."""
    transaction_id, customer_id, sku, quantities, region, occurred_at = columns
    count = len(transaction_id)
    if len(set(transaction_id)) != count:
        return None  # a duplicate: the line-by-line check names both lines
    codes = segment.codes
    if not (codes.skus.keys() >= set(sku) and codes.regions.keys() >= set(region)):
        return None  # a code the pricebook lacks
    first = segment.first_line
    lines = range(first, first + count)
    rows = zip(
        lines, transaction_id, customer_id, sku, quantities, region, occurred_at, strict=True
    )
    return CheckedSegment(
        rows_json=f"[{','.join(starmap(_PAYLOAD_ROW, rows))}]".encode(),
        first_line=first,
        last_line=first + count - 1,
        transactions=count,
        quantity=quantity,
        id_checksum=id_checksum_of(transaction_id),
        transaction_ids=list(transaction_id),
        lines=list(lines),
    )


def _header_layout(header: str) -> tuple[tuple[int, ...], int] | None:
    """The required columns' positions (in ``REQUIRED_FIELDS`` order) and the header's
    width, as the reader finds them; None if it would find a problem."""
    names = next(csv.reader([header]), None)
    if not names:
        return None
    problems = ProblemCollector(1, field_order=REQUIRED_FIELDS)
    positions = required_columns(names, 1, problems)
    if positions is None or problems.found:
        return None
    return tuple(positions), len(names)


@lru_cache(maxsize=16)  # per header: a helper sees few
def _line_pattern(layout: tuple[tuple[int, ...], int]) -> tuple[re.Pattern[str], tuple[int, ...]]:
    """The pattern of a good line of this header, and which required field each of its
    groups is (groups come in the header's order).

    A SKU and a region are matched as codes (the id alphabet, which the pricebook's codes
    are written in) and looked up afterwards, a set of a column at once: spelled out as
    alternatives, a pricebook of a thousand SKUs would cost a thousand tries a line."""
    positions, width = layout
    values = VALUE_PATTERNS
    # A field no rule reads: anything the csv module reads as one field of that length.
    other = f'[^,\r\n"\x00]{{0,{csv.field_size_limit()}}}'
    field_at = {position: number for number, position in enumerate(positions)}
    fields = [
        f"({values[REQUIRED_FIELDS[field_at[index]]]})" if index in field_at else other
        for index in range(width)
    ]
    # ^ and $ at every line (MULTILINE); a CRLF's CR is the line's end, as csv reads it.
    pattern = re.compile("^" + ",".join(fields) + "\r?$", re.MULTILINE)
    groups = tuple(field_at[index] for index in sorted(field_at))
    return pattern, groups
