"""The body as the batch file's bytes: optional gzip inflation with hard size limits.

Inflation is incremental and bounded per step (``max_length``), so a small "zip bomb" body
can never expand in memory beyond one step before the decompressed-size limit stops it.
Concatenated gzip members (what ``cat a.gz b.gz`` produces) are one valid stream.
The ``checkpoint`` runs before each block of the batch file is handed on (at most
``INFLATE_STEP`` bytes when inflating): the place where an intake whose client has gone
can stop, since a small body may inflate for a long time after its last byte was read.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

from initiator.intake.problems import ProblemCollector, Status

GZIP_MAGIC = b"\x1f\x8b"
INFLATE_STEP = 256 * 1024
"""Most bytes one inflation step may produce: the bound on memory a hostile body can claim."""
_GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS  # zlib detects the gzip (or zlib) header by itself


def batch_bytes(
    chunks: Iterable[bytes],
    *,
    gzip_declared: bool,
    max_body_bytes: int | None,
    max_decompressed_bytes: int | None,
    problems: ProblemCollector,
    checkpoint: Callable[[], None] | None = None,
) -> Iterator[bytes]:
    """Yield the batch file's bytes, inflating gzip when declared or when the magic says so."""
    body = _limited(chunks, max_body_bytes, "request body", problems)
    head = b""
    for chunk in body:
        head += chunk
        if len(head) >= len(GZIP_MAGIC):
            break
    if not head:
        return
    rest = _prepend(head, body)
    decoded = _gunzip(rest, problems) if gzip_declared or head.startswith(GZIP_MAGIC) else rest
    limited = _limited(decoded, max_decompressed_bytes, "decompressed batch", problems)
    if checkpoint is None:
        yield from limited
        return
    for block in limited:
        checkpoint()
        yield block


def _prepend(head: bytes, chunks: Iterator[bytes]) -> Iterator[bytes]:
    yield head
    yield from chunks


def _limited(
    chunks: Iterable[bytes], limit: int | None, what: str, problems: ProblemCollector
) -> Iterator[bytes]:
    """Pass chunks through (skipping empty ones), stopping with 413 once ``limit`` is passed."""
    total = 0
    for chunk in chunks:
        if not chunk:
            continue
        total += len(chunk)
        if limit is not None and total > limit:
            problems.stop(
                None,
                None,
                f"the {what} is larger than the limit of {limit:,} bytes",
                Status.TOO_LARGE,
            )
        yield chunk


def _gunzip(chunks: Iterable[bytes], problems: ProblemCollector) -> Iterator[bytes]:
    inflater = zlib.decompressobj(_GZIP_OR_ZLIB)
    member = 1
    fed = False  # whether the current member has received any input
    for chunk in chunks:
        data = chunk
        while data:
            fed = True
            try:
                yield from _inflate(inflater, data)
            except zlib.error as exc:
                _report_corrupt(member, exc, problems)
            if not inflater.eof:
                break
            # One member ended; whatever follows must be another complete member.
            data = inflater.unused_data
            inflater = zlib.decompressobj(_GZIP_OR_ZLIB)
            member += 1
            fed = False
    if fed and not inflater.eof:
        problems.stop(
            None,
            None,
            "the gzip stream is truncated: the body ended before the end of the compressed data",
            Status.MALFORMED,
        )


def _inflate(inflater: zlib._Decompress, data: bytes) -> Iterator[bytes]:
    """Inflate ``data`` in steps of at most ``INFLATE_STEP`` output bytes."""
    while True:
        out = inflater.decompress(data, INFLATE_STEP)
        if out:
            yield out
        if inflater.eof:
            return  # what follows the member is in unused_data (unconsumed_tail may echo it)
        data = inflater.unconsumed_tail
        # A full step may leave output pending inside zlib even with no input left.
        if not data and len(out) < INFLATE_STEP:
            return


def _report_corrupt(member: int, exc: zlib.error, problems: ProblemCollector) -> None:
    if member == 1:
        reason = f"the body is not valid gzip data ({exc})"
    else:
        reason = f"the data after gzip member {member - 1} is not a valid gzip member ({exc})"
    problems.stop(None, None, reason, Status.MALFORMED)
