"""What an intake helper is given (a :class:`Segment`) and what it answers for a clean one
(a :class:`CheckedSegment`): the two ways of checking a segment
(:mod:`initiator.intake.segments`, :mod:`initiator.intake.line_pattern`) share them.
"""

from __future__ import annotations

from dataclasses import dataclass

from initiator.intake.fields import CodeBook


@dataclass(frozen=True)
class Segment:
    """A run of the file's lines (a chunk or part of one), for a helper to check
    (:func:`~initiator.intake.segments.check_segment`)."""

    first_line: int
    """The physical line number of the first line of ``data``."""
    header: bytes | None
    """CSV: the header line, LF included; JSON Lines: None."""
    data: bytes
    """Whole lines, each ending with LF but perhaps the file's last."""
    codes: CodeBook


@dataclass(frozen=True)
class CheckedSegment:
    """What a clean segment holds: its rows ready for the chunk's document, and what the
    caller checks."""

    rows_json: bytes
    """Its rows, a part of its chunk's payload document
    (:func:`~shared.contracts.chunk_payload.rows_json`)."""
    first_line: int
    last_line: int
    transactions: int
    quantity: int
    id_checksum: int
    transaction_ids: list[str]
    lines: list[int]
    """The line of each of ``transaction_ids``."""
