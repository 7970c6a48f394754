"""What an intake helper spends on one segment, per batch shape: its fast path against the
line-by-line check it stands in for.

A clean CSV segment is checked by one pattern (:mod:`initiator.intake.line_pattern`), a
clean JSON Lines one by one decoder call and the same pattern
(:mod:`initiator.intake.jsonl_pattern`); anything else goes line by line through the serial
reader's code (:func:`initiator.intake.segments.check_lines`). Both are timed here on the
same segment of each shape of :mod:`bench.shapes` (the lines after the header, gzip already
undone, as a helper gets them), in this process, CPU time, best of a few rounds. A fast path
that declines a segment of these clean shapes is an error, not a figure.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable

from bench.report import Report
from bench.shapes import MATRIX, Shape, batch_body, pricebook_document
from initiator.intake.fields import KnownCodes
from initiator.intake.jsonl_pattern import check_jsonl_by_pattern
from initiator.intake.line_pattern import check_by_pattern
from initiator.intake.segment_types import CheckedSegment, Segment
from initiator.intake.segments import check_lines
from shared.domain.pricebook import load_pricebook

SHAPES = ("base", "customers-200k", "ts-+05:30", "jsonl", "everything")
#: A segment's lines by default (``BILLING_INTAKE_SEGMENT_LINES``).
SEGMENT_LINES = 16_000


def segment_check_cost(report: Report, *, quick: bool) -> None:
    lines = 2_000 if quick else SEGMENT_LINES
    rounds = 2 if quick else 5
    rows: list[list[str | int | float]] = []
    for name in SHAPES:
        shape = MATRIX[name].resized(lines)
        segment = _segment_of(shape)
        fast_path = check_by_pattern if shape.file_format == "csv" else check_jsonl_by_pattern
        fast = _best_seconds(fast_path, segment, rounds)
        line_by_line = _best_seconds(check_lines, segment, rounds)
        ratio = line_by_line / fast
        rows.append(
            [name, shape.file_format, lines, fast / lines * 1e6, line_by_line / lines * 1e6, ratio]
        )
        report.figure(f"segment_{name}_line_check_over_fast_path", ratio)
    report.table(
        "one segment in a helper: the fast path against the line-by-line check (CPU, best of "
        f"{rounds})",
        ["shape", "format", "lines", "fast µs/line", "line by line µs/line", "ratio"],
        rows,
    )


def _segment_of(shape: Shape) -> Segment:
    body = batch_body(shape)
    data = gzip.decompress(body) if shape.gzip else body
    codes = KnownCodes.of(load_pricebook(pricebook_document(shape)))
    if shape.file_format == "csv":
        header, _, lines = data.partition(b"\n")
        return Segment(2, header + b"\n", lines, codes)
    return Segment(1, None, data, codes)


def _best_seconds(
    check: Callable[[Segment], CheckedSegment | None], segment: Segment, rounds: int
) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        checked = check(segment)
        best = min(best, time.process_time() - started)
        if checked is None:
            raise RuntimeError(f"{check.__name__} declined a clean segment of a benchmark shape")
    return best
