"""A clean JSON Lines segment decoded in one call, then checked by the CSV line pattern.

The line-by-line check (:func:`~initiator.intake.segments.check_lines`) gives each JSON
Lines line to the ``json`` module, then to a
:class:`~initiator.intake.fields.TransactionValidator` call: about three times the CPU of
a CSV line that the line pattern (:mod:`initiator.intake.line_pattern`) vouches for. Here
msgspec decodes the whole segment, its lines joined into one JSON array, into records of
exactly the six fields, typed as the JSON Lines rules want them (strings, and a JSON
integer for the quantity: ``true``, ``5.0`` and ``"5"`` are refused as the line check
refuses them); the records are written back as the CSV lines they stand for and the line
pattern checks those: less than half the CPU of the line-by-line check (``python -m
bench.intake``, its segment table).

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

import msgspec

from initiator.intake.fields import MAX_QUANTITY, REQUIRED_FIELDS
from initiator.intake.line_pattern import check_by_pattern
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
#: The CSV header of the lines the records are written back as.
_HEADER = (",".join(REQUIRED_FIELDS) + "\n").encode()


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
    if not all(0 < record.quantity <= MAX_QUANTITY for record in records):
        return None
    lines = "".join(
        f"{r.transaction_id},{r.customer_id},{r.sku},{r.quantity},{r.region},{r.occurred_at}\n"
        for r in records
    )
    checked = check_by_pattern(Segment(segment.first_line, _HEADER, lines.encode(), segment.codes))
    if checked is None or checked.transactions != len(records):
        return None  # a value with a comma or a line feed: not the record it looks like
    return checked
