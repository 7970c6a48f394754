"""A batch file cut into runs of lines, each validated on its own (the parallel intake).

The serial reader (:mod:`initiator.intake.reader`) is the authority on a batch file: it
alone words rejections. This module lets helper processes take the common case, a clean
file, off the request's thread. It only ever answers "clean" or "not clean"; anything not
clean (a bad value, a quote, a duplicate within the run, a line without its fields) is
read again by the serial reader, which then says exactly what and where.

:func:`cut_segments` cuts the file's bytes at line feeds into runs of ``sizes`` lines, the
chunk plan, each chunk in one run or, when it is larger than the segment size, in several:
a helper's memory is then a segment's worth whatever the chunk size, and the caller puts a
chunk's runs back together (:func:`~shared.contracts.chunk_payload.chunk_json_of_parts`).
:func:`check_segment`, in a helper process, checks a run and, when clean, returns its rows
encoded for the chunk's payload document, its control totals and its transaction ids (for
the check across runs, which only the caller can make). A CSV run goes first to the
pattern of a good line (:mod:`initiator.intake.line_pattern`), which vouches for the
common clean run at about half the cost, and a JSON Lines run to one decoder call and the
same pattern (:mod:`initiator.intake.jsonl_pattern`); any run they are not sure of goes
through the very code the serial reader uses (:func:`text_lines`, :func:`csv_records` or
:func:`jsonl_records`, :class:`TransactionValidator`), which decides.

Why one CSV line is one record here: a run holding a double quote is not clean (a quoted
field may span lines, and a cut inside one would change what the fields are), so every
line of a clean run is a whole record or blank. JSON Lines has no such case: a JSON string
cannot hold a raw line feed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from initiator.intake.csv_batch import csv_records
from initiator.intake.duplicates import DuplicateDetector
from initiator.intake.fields import REQUIRED_FIELDS, TransactionValidator
from initiator.intake.jsonl_batch import jsonl_records
from initiator.intake.jsonl_pattern import check_jsonl_by_pattern
from initiator.intake.line_pattern import check_by_pattern
from initiator.intake.lines import MAX_LINE_BYTES, text_lines
from initiator.intake.problems import ProblemCollector, StopScanning
from initiator.intake.segment_types import CheckedSegment, Segment
from shared.contracts.chunk_payload import NumberedTransaction, rows_json
from shared.domain.transactions import ControlTotalsBuilder

QUOTE = b'"'


class NotSegmentable(Exception):  # noqa: N818 - a control-flow signal, like StopIteration
    """The file is not one the segments can take: the serial reader reads it instead."""


class Cut(NamedTuple):
    """A run of lines from :func:`cut_segments`."""

    first_line: int
    """The physical line number of the run's first line."""
    data: bytes
    """Whole lines, each ending with LF but perhaps the file's last."""
    ends_chunk: bool
    """Whether the run is its chunk's last (the file's last run may end its chunk short of
    the plan with this False: it ends with the file)."""


def check_segment(segment: Segment) -> CheckedSegment | None:
    """Validate ``segment`` as the serial reader would; its chunk if clean, else None."""
    if segment.header is not None:
        if QUOTE in segment.data or QUOTE in segment.header:
            return None
        checked = check_by_pattern(segment)  # the common case, in one pass
    else:
        checked = check_jsonl_by_pattern(segment)  # JSON Lines' common case
    return checked if checked is not None else check_lines(segment)


def check_lines(segment: Segment) -> CheckedSegment | None:
    """:func:`check_segment` a line at a time, with the serial reader's own code, for a run
    without a double quote (:func:`check_segment` refuses those before)."""
    problems = ProblemCollector(1, field_order=REQUIRED_FIELDS)
    duplicates = DuplicateDetector(memory_limit=segment.data.count(b"\n") + 1)
    validator = TransactionValidator(segment.codes, duplicates, problems)
    rows: list[NumberedTransaction] = []
    try:
        if segment.header is None:
            offset = segment.first_line - 1
            lines = text_lines([segment.data], problems, keep_newline=False)
            records = jsonl_records(lines, validator, problems)
        else:
            offset = segment.first_line - 2  # the header is the reader's line 1
            lines = text_lines([segment.header, segment.data], problems, keep_newline=True)
            records = csv_records(lines, validator, problems)
        for line, transaction in records:
            if transaction is None or problems.found:
                return None
            rows.append((line + offset, transaction))
    except StopScanning:
        return None
    finally:
        duplicates.close()
    if problems.found or not rows:
        return None
    totals = ControlTotalsBuilder()
    transactions = [transaction for _, transaction in rows]
    totals.add_all(transactions)
    built = totals.build()
    return CheckedSegment(
        rows_json=rows_json(rows),
        first_line=rows[0][0],
        last_line=rows[-1][0],
        transactions=len(rows),
        quantity=built.quantity,
        id_checksum=built.id_checksum,
        transaction_ids=[transaction.transaction_id for transaction in transactions],
        lines=[line for line, _ in rows],
    )


def nth_line_feed(data: bytearray, n: int, line_feeds: int) -> int:
    """The index of the ``n``-th line feed (from 1) of ``data``, which holds ``line_feeds``
    of them (at least ``n``).

    Found by counting rather than by a ``find`` per line (a Python step per line on the
    request's thread, which the helpers wait for): a guess from the average line length,
    the line feeds before it counted in C, then a ``find`` or ``rfind`` per line the guess
    was off, a handful when the lines are about as long as each other.
    """
    guess = len(data) * n // line_feeds
    before = data.count(b"\n", 0, guess)
    if before < n:
        end = guess - 1
        for _ in range(n - before):
            end = data.find(b"\n", end + 1)
        return end
    end = data.rfind(b"\n", 0, guess)  # the ``before``-th
    for _ in range(before - n):
        end = data.rfind(b"\n", 0, end)
    return end


def cut_segments(
    content: Iterable[bytes], sizes: Iterator[int], *, most_lines: int, first_line: int = 1
) -> Iterator[Cut]:
    """Consecutive runs of lines: each chunk of the plan (``next(sizes)`` lines) in runs of
    at most ``most_lines``, the last of each marked (:attr:`Cut.ends_chunk`).

    Raises :class:`NotSegmentable` for a line longer than the serial reader allows
    (:data:`MAX_LINE_BYTES`): it would refuse it, so it should be the one to say so.
    """
    buffer = bytearray()
    newlines = 0  # in buffer
    chunk_left = next(sizes)  # lines of the current chunk not yet cut
    for block in content:
        buffer += block
        newlines += block.count(b"\n")
        if len(buffer) - buffer.rfind(b"\n") > MAX_LINE_BYTES:
            raise NotSegmentable("a line is longer than the reader allows")
        while newlines >= (wanted := min(chunk_left, most_lines)):
            end = nth_line_feed(buffer, wanted, newlines)
            chunk_left -= wanted
            yield Cut(first_line, bytes(buffer[: end + 1]), ends_chunk=not chunk_left)
            del buffer[: end + 1]
            newlines -= wanted
            first_line += wanted
            if not chunk_left:
                chunk_left = next(sizes)
    if buffer:
        yield Cut(first_line, bytes(buffer), ends_chunk=True)
