"""``parse_batch``: a request body in, validated transactions out, one line at a time.

The pipeline is a chain of generators, so nothing larger than one block of the body (plus
the duplicate detector's bounded state) is ever held::

    chunks -> batch_bytes (size limits, gzip) -> strip_bom_and_sniff -> text_lines
           -> csv_records | jsonl_records (field rules) -> BatchReader (gating, problem limit)

Any problem rejects the whole batch, so once one is found the reader stops handing out
transactions but keeps scanning, to report up to ``max_problems`` of them in line order.

Next step (docs/walkthrough.md): ``initiator.publishing.publisher``, which stores the chunks
this yields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from initiator.intake.csv_batch import csv_records
from initiator.intake.decompress import batch_bytes
from initiator.intake.duplicates import DEFAULT_MEMORY_LIMIT, DuplicateDetector
from initiator.intake.fields import REQUIRED_FIELDS, CodeBook, TransactionValidator
from initiator.intake.jsonl_batch import jsonl_records
from initiator.intake.lines import strip_bom_and_sniff, text_lines
from initiator.intake.media import BatchFormat, format_for, gzip_declared
from initiator.intake.problems import (
    BatchRejected,
    Problem,
    ProblemCollector,
    Status,
    StopScanning,
)
from shared.closing import Closing
from shared.domain.transactions import Transaction

DEFAULT_MAX_DECOMPRESSED_BYTES = 1024**3
"""1 GiB: the 1 GB batches the design expects, and what a sample deployment can afford to
parse for one small compressed body (``BILLING_MAX_DECOMPRESSED_BYTES`` has the same)."""


class BatchReader(Closing):
    """Iterate once for ``(line_no, Transaction)``; then ask :meth:`rejection`.

    A transaction handed out is only known to belong to an accepted batch once iteration
    has ended with ``rejection()`` returning None (a duplicate, for instance, may be found
    after its first occurrence was handed out).
    """

    def __init__(
        self,
        chunks: Iterable[bytes],
        *,
        batch_format: BatchFormat | None,
        gzip: bool | None,
        codes: CodeBook,
        problems: ProblemCollector,
        duplicates: DuplicateDetector,
        max_body_bytes: int | None,
        max_decompressed_bytes: int | None,
        checkpoint: Callable[[], None] | None = None,
    ) -> None:
        self._chunks = chunks
        self._checkpoint = checkpoint
        self._declared_format = batch_format
        self._gzip = gzip
        self._problems = problems
        self._duplicates = duplicates
        self._validator = TransactionValidator(codes, duplicates, problems)
        self._limits = (max_body_bytes, max_decompressed_bytes)
        self._started = False
        self._finished = False
        self.format: BatchFormat | None = None
        """CSV or JSON_LINES once known (after sniffing, if the type was generic)."""

    @property
    def problems(self) -> list[Problem]:
        """Problems found so far, in line order (at most ``max_problems``)."""
        return self._problems.problems

    @property
    def finished(self) -> bool:
        """Whether the scan has ended (the whole body read, or stopped at a problem)."""
        return self._finished

    def rejection(self) -> BatchRejected | None:
        """The rejection to answer with, or None when the batch is accepted.

        Raises RuntimeError if the body has not been read to the end and no problem was
        found: accepting half a batch would be wrong.
        """
        rejected = self._problems.rejection()
        if rejected is None and not self._finished:
            raise RuntimeError("the batch has not been read to the end; iterate the reader first")
        return rejected

    def close(self) -> None:
        """Release the duplicate detector's temporary storage (iteration's end does too)."""
        self._duplicates.close()

    def __iter__(self) -> Iterator[tuple[int, Transaction]]:
        if self._started:
            raise RuntimeError("a BatchReader can be iterated only once")
        self._started = True
        try:
            yield from self._scan()
        except StopScanning:
            pass
        finally:
            self.close()  # also when the consumer abandons the iteration
        self._finished = True

    def _scan(self) -> Iterator[tuple[int, Transaction]]:
        if self._declared_format is None or self._gzip is None:
            return  # 415, decided from the headers
        problems = self._problems
        max_body_bytes, max_decompressed_bytes = self._limits
        body = batch_bytes(
            self._chunks,
            gzip_declared=self._gzip,
            max_body_bytes=max_body_bytes,
            max_decompressed_bytes=max_decompressed_bytes,
            problems=problems,
            checkpoint=self._checkpoint,
        )
        first_byte, content = strip_bom_and_sniff(body)
        if first_byte == b"":
            problems.stop(None, None, "empty batch: the body holds no data", Status.MALFORMED)
        self.format = self._declared_format
        if self.format is BatchFormat.SNIFF:
            self.format = BatchFormat.JSON_LINES if first_byte == b"{" else BatchFormat.CSV
        if self.format is BatchFormat.CSV:
            lines = text_lines(content, problems, keep_newline=True)
            records = csv_records(lines, self._validator, problems)
        else:
            lines = text_lines(content, problems, keep_newline=False)
            records = jsonl_records(lines, self._validator, problems)
        duplicates = self._duplicates
        for line, transaction in records:
            if transaction is not None and not problems.found:
                yield line, transaction
            elif problems.found:
                unchecked = duplicates.unchecked_from
                checked_through = line if unchecked is None else min(line, unchecked - 1)
                if problems.is_settled(checked_through):
                    problems.truncated = True
                    return
        known = duplicates.duplicates_found
        late = duplicates.finish(limit=problems.limit)
        self._validator.report_duplicates(late)
        if duplicates.duplicates_found - known > len(late):
            problems.truncated = True


def parse_batch(
    chunks: Iterable[bytes],
    *,
    content_type: str | None,
    content_encoding: str | None,
    pricebook: CodeBook,
    max_problems: int = 100,
    max_body_bytes: int | None = None,
    max_decompressed_bytes: int | None = DEFAULT_MAX_DECOMPRESSED_BYTES,
    temp_dir: str | Path | None = None,
    duplicates_in_memory: int = DEFAULT_MEMORY_LIMIT,
    checkpoint: Callable[[], None] | None = None,
) -> BatchReader:
    """Read a batch file from the body's chunks, lazily: nothing is read until iteration.

    ``max_body_bytes`` bounds the body as sent (compressed, if gzip) and
    ``max_decompressed_bytes`` the batch file itself; either gives 413. Unsupported
    ``content_type`` / ``content_encoding`` give 415 at once (``rejection()`` answers before
    iterating). ``temp_dir`` and ``duplicates_in_memory`` tune the duplicate detector.
    ``checkpoint`` is called before each block of the (inflated) file is parsed; an
    exception it raises ends the scan and propagates (see :func:`batch_bytes`).
    """
    problems = ProblemCollector(max_problems, field_order=REQUIRED_FIELDS)
    return BatchReader(
        chunks,
        batch_format=format_for(content_type, problems),
        gzip=gzip_declared(content_encoding, problems),
        codes=pricebook,
        problems=problems,
        duplicates=DuplicateDetector(memory_limit=duplicates_in_memory, temp_dir=temp_dir),
        max_body_bytes=max_body_bytes,
        max_decompressed_bytes=max_decompressed_bytes,
        checkpoint=checkpoint,
    )
