"""The CSV header: where each required column is, or why the header cannot be used.

Columns may come in any order and extra columns are ignored. A missing column is reported
with the closest unknown header name as a hint (``difflib``), since a typo or a different
case is the usual cause.

The header is bounded before any of that (:func:`header_size_problem`): every later line is
split into as many fields as the header has, and the hint compares names pairwise, so a
header of half a million columns would cost seconds of CPU and hundreds of MB per request.
"""

from __future__ import annotations

import difflib

from initiator.intake.fields import REQUIRED_FIELDS
from initiator.intake.problems import ProblemCollector, Status

#: The most columns a header may have: six are needed, the rest are carried and ignored.
MAX_HEADER_COLUMNS = 1_024
#: The longest header line, in bytes (its line feed excluded).
MAX_HEADER_BYTES = 64 * 1024


def header_size_problem(names: list[str]) -> str | None:
    """Why a header with these column names is too large to read on, or None."""
    if len(names) > MAX_HEADER_COLUMNS:
        return (
            f"the header has {len(names):,} columns; at most {MAX_HEADER_COLUMNS:,} are "
            "allowed (the six required ones, in any order, and others that are ignored)"
        )
    size = sum(len(name.encode("utf-8", "surrogateescape")) for name in names) + len(names) - 1
    if size > MAX_HEADER_BYTES:
        return f"the header line has {size:,} bytes; at most {MAX_HEADER_BYTES:,} are allowed"
    return None


def required_columns(names: list[str], line: int, problems: ProblemCollector) -> list[int] | None:
    """Positions of ``REQUIRED_FIELDS`` in the header, or None after recording problems."""
    positions: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        positions.setdefault(name.strip(), []).append(index)
    unknown = [name for name in positions if name and name not in REQUIRED_FIELDS]
    if not any(name in REQUIRED_FIELDS or name.lower() in REQUIRED_FIELDS for name in positions):
        expected = ", ".join(REQUIRED_FIELDS)
        problems.add(
            line,
            None,
            f"the first line has none of the required columns {expected}: a header line "
            "naming them (in any order) must come first",
            Status.MALFORMED,
        )
        return None
    columns: list[int] = []
    for field in REQUIRED_FIELDS:
        found = positions.get(field, [])
        if len(found) == 1:
            columns.append(found[0])
        elif not found:
            problems.add(line, field, _missing(field, unknown), Status.MALFORMED)
        else:
            numbers = ", ".join(str(index + 1) for index in found)
            problems.add(
                line,
                field,
                f"column {field!r} appears {len(found)} times in the header (columns {numbers})",
                Status.MALFORMED,
            )
    return columns if len(columns) == len(REQUIRED_FIELDS) else None


def _missing(field: str, unknown: list[str]) -> str:
    by_lower = {name.lower(): name for name in unknown}
    close = difflib.get_close_matches(field, list(by_lower), n=1, cutoff=0.6)
    if close:
        found = by_lower[close[0]]
        return f"missing column {field!r}; the header has {found!r}: did you mean {field!r}?"
    return f"missing column {field!r} in the header"
