"""Reading a clean batch file with the intake's helper processes, in segments.

One thread validates ~130,000 transactions a second, so a large batch's ``202`` waits for
one core while the others idle. Here the request's thread only reads the body (inflating
gzip, with the same limits and checkpoints as the serial reader), cuts it into runs of
lines, one per chunk of the chunk plan (:func:`~initiator.acceptance.growing_chunks`'
sizes) or several for a chunk larger than ``segment_lines``, and hands them to the helpers
(:func:`initiator.intake.segments.check_segment`), a few at a time. In file order, it then
takes each checked segment: checks its transaction ids against every earlier one (the
same :class:`DuplicateDetector`, in bounded memory), counts its blank lines against the
file's cap, adds its control totals and, at the last segment of a chunk, stores the chunk
(its payload document put together from the rows the helpers encoded).

Why segments have a size of their own: a helper holds a segment's transactions as objects
while it checks them, ~1 KB a line, so a helper's memory grows with what it checks at
once (``bench.intake`` reports the initiator's peak); a chunk's size is a matter of storage
requests, a segment's of memory.

It answers only for a file that passes all of that: :func:`read_in_segments` returns the
control totals, or None when anything is not clean (a bad line, a quote in a CSV file, a
duplicate, a size limit, a damaged gzip member, a helper that died). The caller then
discards what was stored and reads the body again, from the start, with the serial reader
(:mod:`initiator.intake.reader`), which words the rejection exactly as always; a file with
quoted fields is accepted that way too. So a rejected or quoted file costs a second read,
and a clean one about a core's worth of less time to its ``202`` per helper.

What the serial reader takes and this does not (so that the answer stays its answer): a
blank prefix before the first line (the header's search), and a CSV header or line with a
double quote in it.

Next step (docs/walkthrough.md): ``initiator.publishing.publisher``, which stores the chunks
this puts together.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from itertools import chain, islice
from typing import Protocol

from initiator.intake.blank_lines import MAX_BLANK_LINES
from initiator.intake.decompress import batch_bytes
from initiator.intake.duplicates import DuplicateDetector
from initiator.intake.fields import CodeBook, KnownCodes
from initiator.intake.header import MAX_HEADER_BYTES, MAX_HEADER_COLUMNS
from initiator.intake.lines import BLANK_BYTES, MAX_LINE_BYTES, line_count, strip_bom_and_sniff
from initiator.intake.media import BatchFormat, format_for, gzip_declared
from initiator.intake.problems import ProblemCollector, StopScanning
from initiator.intake.segment_types import CheckedSegment, Segment
from initiator.intake.segments import QUOTE, Cut, NotSegmentable, check_segment, cut_segments
from initiator.intake_helpers import IntakeHelpers
from shared.contracts.chunk_payload import chunk_json_of_parts
from shared.domain.transactions import ID_CHECKSUM_MODULUS, ControlTotals

log = logging.getLogger(__name__)

#: Segments at the helpers at once, per helper: enough that none waits for the next, few
#: enough that memory stays a few chunks' worth (a segment is ~100 bytes a line).
_IN_FLIGHT_PER_HELPER = 2


class ChunkSink(Protocol):
    """Where checked chunks go (:class:`~initiator.publishing.Publication`)."""

    def add_chunk_document(
        self, document: bytes, lines: tuple[int, int, int], transaction_ids: Iterable[str]
    ) -> None: ...


def read_in_segments(
    body: Iterable[bytes],
    *,
    content_type: str | None,
    content_encoding: str | None,
    codes: CodeBook,
    batch_id: str,
    sizes: Iterator[int],
    segment_lines: int,
    sink: ChunkSink,
    helpers: IntakeHelpers,
    max_decompressed_bytes: int | None,
    checkpoint: Callable[[], None] | None = None,
) -> ControlTotals | None:
    """The batch's control totals, its chunks stored in ``sink``; None: read it serially.

    ``sizes``: the chunk plan, the lines of each chunk in turn; ``segment_lines``: the most
    lines a helper checks at once. Exceptions other than "not clean" (a client gone at a
    ``checkpoint``, a storage error) propagate.
    """
    problems = ProblemCollector(1)
    batch_format = format_for(content_type, problems)
    gzip = gzip_declared(content_encoding, problems)
    if batch_format is None or gzip is None:
        return None
    try:
        content = batch_bytes(
            body,
            gzip_declared=gzip,
            max_body_bytes=None,
            max_decompressed_bytes=max_decompressed_bytes,
            problems=problems,
            checkpoint=checkpoint,
        )
        first_byte, rest = strip_bom_and_sniff(content)
        if not first_byte:
            return None
        if batch_format is BatchFormat.SNIFF:
            batch_format = BatchFormat.JSON_LINES if first_byte == b"{" else BatchFormat.CSV
        header, lines = _split_header(rest, csv=batch_format is BatchFormat.CSV)
        if header is not None and QUOTE in header:
            return None
        reading = _SegmentedRead(codes, batch_id, header, sink, helpers)
        cuts = cut_segments(lines, sizes, most_lines=segment_lines, first_line=2 if header else 1)
        totals = reading.run(cuts)
    except (StopScanning, NotSegmentable):
        return None
    if totals is None or problems.found:
        return None
    return totals


def _split_header(content: Iterator[bytes], *, csv: bool) -> tuple[bytes | None, Iterator[bytes]]:
    """The CSV header line and the bytes after it (JSON Lines: None and all of it).

    Raises :class:`NotSegmentable` when the file starts with a blank: the serial reader
    looks past blank lines for the header, and this does not."""
    head = b""
    for block in content:
        head += block
        if csv and b"\n" not in head and len(head) < MAX_LINE_BYTES:
            continue
        break
    if not head or head[:1] in BLANK_BYTES:
        raise NotSegmentable("the file starts with a blank")
    if not csv:
        return None, chain([head], content)
    end = head.find(b"\n") + 1
    if not end:
        raise NotSegmentable("the header has no end in sight")
    if end - 1 > MAX_HEADER_BYTES or head.count(b",", 0, end) >= MAX_HEADER_COLUMNS:
        raise NotSegmentable("the header is too large: the serial reader says so")
    return head[:end], chain([head[end:]], content)


class _SegmentedRead:
    """One file's segments: out to the helpers, back in order, checked across, stored."""

    def __init__(
        self,
        codes: CodeBook,
        batch_id: str,
        header: bytes | None,
        sink: ChunkSink,
        helpers: IntakeHelpers,
    ) -> None:
        self._codes = KnownCodes.of(codes)  # sent with every segment: the codes alone
        self._batch_id = batch_id
        self._header = header
        self._sink = sink
        self._helpers = helpers
        self._duplicates = DuplicateDetector()
        self._blank_lines = 0
        self._transactions = 0
        self._quantity = 0
        self._id_checksum = 0
        self._chunks = 0  # stored so far
        self._parts: list[CheckedSegment] = []  # of the chunk being put together

    def run(self, cuts: Iterator[Cut]) -> ControlTotals | None:
        try:
            if not self._take_all(cuts):
                return None
            if self._parts:  # the file ended where the plan's chunk had more to come
                self._store_chunk()
            if self._duplicates.finish(limit=1) or not self._transactions:
                return None
        finally:
            self._duplicates.close()
        return ControlTotals(
            transactions=self._transactions,
            quantity=self._quantity,
            id_checksum=self._id_checksum,
        )

    def _take_all(self, cuts: Iterator[Cut]) -> bool:
        """Every segment checked and taken in order; False at the first that is not clean."""
        first_two = list(islice(cuts, 2))
        if len(first_two) == 1:  # one segment: checked right here, no helper started for it
            cut = first_two[0]
            return self._take(cut, check_segment(self._segment(cut)))
        pool = self._helpers.pool()
        window = self._helpers.processes * _IN_FLIGHT_PER_HELPER
        pending: deque[tuple[Cut, Future[CheckedSegment | None]]] = deque()
        try:
            for cut in chain(first_two, cuts):
                if self._header is not None and QUOTE in cut.data:
                    return False  # found early, before the helpers spend time on it
                pending.append((cut, pool.submit(check_segment, self._segment(cut))))
                while len(pending) >= window:
                    taken, future = pending.popleft()
                    if not self._take(taken, future.result()):
                        return False
            while pending:
                taken, future = pending.popleft()
                if not self._take(taken, future.result()):
                    return False
        except BrokenProcessPool:
            log.warning("an intake helper died; this batch is read by the request's thread")
            self._helpers.discard_broken(pool)
            return False
        finally:
            for _, future in pending:
                future.cancel()
        return True

    def _segment(self, cut: Cut) -> Segment:
        return Segment(cut.first_line, self._header, cut.data, self._codes)

    def _take(self, cut: Cut, checked: CheckedSegment | None) -> bool:
        """Check one segment across the others and, if it ends its chunk, store the chunk;
        False if not clean."""
        if checked is None:
            return False
        # a helper found the segment's own ids distinct
        if not self._duplicates.add_distinct(checked.transaction_ids, checked.lines):
            return False
        self._blank_lines += line_count(cut.data) - checked.transactions
        if self._blank_lines > MAX_BLANK_LINES:
            return False
        self._transactions += checked.transactions
        self._quantity += checked.quantity
        self._id_checksum = (self._id_checksum + checked.id_checksum) % ID_CHECKSUM_MODULUS
        self._parts.append(checked)
        if cut.ends_chunk:
            self._store_chunk()
        return True

    def _store_chunk(self) -> None:
        parts, self._parts = self._parts, []
        document = chunk_json_of_parts(
            self._batch_id, self._chunks, [part.rows_json for part in parts]
        )
        self._chunks += 1
        transactions = sum(part.transactions for part in parts)
        self._sink.add_chunk_document(
            document,
            (parts[0].first_line, parts[-1].last_line, transactions),
            chain.from_iterable(part.transaction_ids for part in parts),
        )
