"""CSV batch files: the header, then one transaction per record.

Physical line numbers come from the ``csv`` reader's own count of lines consumed
(``line_num``): a record starts on the line after the previous record ended, which stays
exact when a quoted field spans lines. Reading uses ``strict`` mode so a stray quote is an
error rather than a silently merged field. A quote that is never closed makes the reader
swallow lines until ``csv.field_size_limit()`` (128 KiB by default), which is also what
bounds memory in that case; after any such framing error the rest of the file cannot be
trusted, so the scan stops there.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from itertools import chain

from initiator.intake.blank_lines import BlankLines
from initiator.intake.fields import MAX_QUANTITY, MAX_QUANTITY_DIGITS, TransactionValidator
from initiator.intake.header import header_size_problem, required_columns
from initiator.intake.problems import ProblemCollector, Status, StopScanning
from shared.domain.transactions import Transaction


def csv_records(
    blocks: Iterable[list[str]], validator: TransactionValidator, problems: ProblemCollector
) -> Iterator[tuple[int, Transaction | None]]:
    """Yield ``(line, transaction or None)`` for every data record; None marks a bad one."""
    reader = csv.reader(chain.from_iterable(blocks), strict=True)
    ended = 0  # the line on which the previous record ended
    records = 0
    blanks = BlankLines(problems)
    try:
        for header in reader:
            if problems.has_problem_through(reader.line_num):
                raise StopScanning("the header line is unreadable")  # e.g. not UTF-8
            if not _is_blank(header):
                break
            blanks.skip(reader.line_num)
        else:
            problems.stop(None, None, "empty batch: the body holds no data", Status.MALFORMED)
        ended = reader.line_num
        too_large = header_size_problem(header)
        if too_large is not None:
            problems.stop(ended, None, too_large, Status.MALFORMED)
        columns = required_columns(header, ended, problems)
        if columns is None or problems.has_problem_through(ended):
            raise StopScanning("the header is unusable")
        width = len(header)
        tid, cid, sku, qty, region, when = columns
        accept = validator.accept
        max_digits = MAX_QUANTITY_DIGITS
        for row in reader:
            start, ended = ended + 1, reader.line_num
            if len(row) == width:
                records += 1
                digits = row[qty]
                # Plain ASCII digits only: no sign, blank, decimal point or other digit forms.
                if digits.isdigit() and digits.isascii() and len(digits) <= max_digits:
                    quantity: int | None = int(digits)
                else:
                    quantity = None
                    problems.add(start, "quantity", _quantity_problem(digits))
                yield (
                    start,
                    accept(start, row[tid], row[cid], row[sku], quantity, row[region], row[when]),
                )
            elif not _is_blank(row):
                records += 1
                problems.add(start, None, _width_problem(len(row), width, start, ended))
                yield start, None
            else:
                blanks.skip(start)
    except csv.Error as exc:
        problems.stop(
            ended + 1, None, _csv_error_reason(exc, ended + 1, reader.line_num), Status.MALFORMED
        )
    if not records:
        problems.add(
            None, None, "no transactions: the file has a header but no data lines", Status.MALFORMED
        )


def _is_blank(row: list[str]) -> bool:
    return not row or (len(row) == 1 and not row[0].strip())


#: An out-of-range quantity longer than this is described by its length, not echoed.
_SHOWN_DIGITS = 20


def _quantity_problem(text: str) -> str:
    if not text:
        return "quantity is empty"
    if text.isdigit() and text.isascii():
        shown = text if len(text) <= _SHOWN_DIGITS else f"of {len(text):,} digits"
        return f"quantity {shown} is out of range (1 to {MAX_QUANTITY:,})"
    return f"quantity {text!r} is not a whole number written in plain digits (1 to 1,000,000)"


def _width_problem(found: int, width: int, start: int, end: int) -> str:
    reason = f"the line has {found} fields but the header has {width}"
    if end > start:
        reason += f" (a quoted field spans lines {start}-{end}: is a quote unbalanced?)"
    return reason


def _csv_error_reason(exc: csv.Error, start: int, end: int) -> str:
    message = str(exc)
    if end > start or "unexpected end of data" in message or "field limit" in message:
        return (
            f"unbalanced quote: the quoted field opened on line {start} is not closed "
            f"properly (csv: {message})"
        )
    if "new-line character" in message:
        return "a carriage return inside an unquoted field: lines must end with LF or CRLF"
    return f"malformed CSV: {message}"
