"""A clean JSON Lines segment decoded in one call, then checked a column at a time.

The line-by-line check (:func:`~initiator.intake.segments.check_lines`) gives each JSON
Lines line to the ``json`` module, then to a
:class:`~initiator.intake.fields.TransactionValidator` call: about three times the CPU of
a CSV line that the line pattern (:mod:`initiator.intake.line_pattern`) vouches for. Here
msgspec decodes the whole segment, its lines joined into one JSON array, into records of
exactly the six fields, typed as the JSON Lines rules want them (strings, and a JSON
integer for the quantity: ``true``, ``5.0`` and ``"5"`` are refused as the line check
refuses them). Each text column is then checked in one regular expression call against
the line pattern's own value patterns
(:data:`~initiator.intake.line_pattern.VALUE_PATTERNS`), its values joined by line feeds,
and the quantities by their range; what is left (ids, codes, the payload rows, the totals)
is the line pattern's :func:`~initiator.intake.line_pattern.checked_columns`. Writing the
records back as CSV lines for the line pattern instead cost more: 10,000-line segments of
``bench.shapes``' ``jsonl``, medians of four runs side by side, 3.0 against 2.2 µs a line.

Like the pattern, it answers "clean, and here is the segment" or None, "not sure", and
must never accept a segment the line-by-line check refuses. Where the two decoders could
differ it declines: a line with a key other than the six (msgspec would skip a value the
``json`` module refuses, such as an integer of more than 4,300 digits), a NUL or bytes that
are not UTF-8, a blank line, two objects on one line, a quantity out of range. Where both
accept they give the very same
:class:`~initiator.intake.segment_types.CheckedSegment`: a key given twice means its last
value to both. ``tests/unit/test_intake_jsonl_pattern.py`` holds the two together.
"""

from __future__ import annotations

import re
from operator import attrgetter

import msgspec

from initiator.intake.fields import MAX_QUANTITY, REQUIRED_FIELDS
from initiator.intake.line_pattern import VALUE_PATTERNS, checked_columns
from initiator.intake.lines import MAX_LINE_BYTES, line_count
from initiator.intake.segment_types import CheckedSegment, Segment


class _Record(msgspec.Struct, forbid_unknown_fields=True):
    transaction_id: str
    customer_id: str
    sku: str
    quantity: int
    region: str
    occurred_at: str


_decode = msgspec.json.Decoder(list[_Record]).decode
#: A record's values in :data:`REQUIRED_FIELDS` order.
_values = attrgetter(*REQUIRED_FIELDS)
_QUANTITY_COLUMN = REQUIRED_FIELDS.index("quantity")
#: Each text column and the pattern every value of it must match: lines of
#: :data:`~initiator.intake.line_pattern.VALUE_PATTERNS`, joined by line feeds.
_TEXT_COLUMNS = tuple(
    (index, re.compile(f"(?:(?:{VALUE_PATTERNS[field]})\n)*(?:{VALUE_PATTERNS[field]})"))
    for index, field in enumerate(REQUIRED_FIELDS)
    if field != "quantity"
)


def check_jsonl_by_pattern(segment: Segment) -> CheckedSegment | None:
    """``segment`` (JSON Lines) checked and encoded if every line is a clean record, else None."""
    data = segment.data
    if segment.header is not None or not data or b"\x00" in data:
        return None
    if b"\n" not in data and len(data) > MAX_LINE_BYTES:
        return None  # the line check refuses a line that long
    try:
        data.decode("utf-8")  # the line check decodes first; msgspec checks strings only
        records = _decode(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    if len(records) != line_count(data):
        return None  # a blank line, or two objects on one
    columns = tuple(zip(*map(_values, records), strict=True))
    if len(columns) != len(REQUIRED_FIELDS):
        return None  # no record
    quantities = columns[_QUANTITY_COLUMN]
    if not (min(quantities) > 0 and max(quantities) <= MAX_QUANTITY):
        return None
    if not all(_is_column(pattern, columns[index]) for index, pattern in _TEXT_COLUMNS):
        return None
    return checked_columns(segment, columns, sum(quantities))


def _is_column(pattern: re.Pattern[str], values: tuple[str, ...]) -> bool:
    """Whether every one of ``values`` is a whole match of the field's value pattern.

    One call in C for the column: the values joined by line feeds, matched as that many
    lines. A value holding a line feed of its own (a JSON ``\\n``) could match as two
    values, so the line feeds are counted first.
    """
    joined = "\n".join(values)
    return joined.count("\n") == len(values) - 1 and pattern.fullmatch(joined) is not None
