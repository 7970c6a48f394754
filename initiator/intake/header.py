"""The CSV header: where each required column is, or why the header cannot be used.

Columns may come in any order and extra columns are ignored. A missing column is reported
with the closest unknown header name as a hint (``difflib``), since a typo or a different
case is the usual cause.
"""

from __future__ import annotations

import difflib

from initiator.intake.fields import REQUIRED_FIELDS
from initiator.intake.problems import ProblemCollector, Status


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
