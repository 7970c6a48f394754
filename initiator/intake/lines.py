"""From the batch file's bytes to physical lines of text, with exact line numbers.

Bytes are cut at ``\\n`` only (never at the other characters ``str.splitlines`` honours), so
line numbers match what an editor shows; a CR before the LF stays on the line for the CSV
reader to drop. Each block of complete lines is decoded in one call, which keeps the
common case fast; only a block holding a NUL byte or invalid UTF-8 is gone through line by
line to name the culprits. A bad line is replaced by an empty one so that numbering (and
the CSV reader's own count) stays aligned, and reading continues to find more problems.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from initiator.intake.problems import ProblemCollector, Status

UTF8_BOM = b"\xef\xbb\xbf"
MAX_LINE_BYTES = 1024 * 1024
"""A longer line is refused: without a newline in sight the reader would buffer unboundedly."""
SNIFF_LIMIT = 64 * 1024
"""Most leading blank bytes looked through when sniffing before settling on CSV."""
BLANK_BYTES = b" \t\r\n"
"""What a blank line, or the blank prefix before a file's first line, is made of."""


def line_count(data: bytes | str) -> int:
    """The lines a block of text holds: one per LF, and a last one without an LF."""
    if isinstance(data, bytes):
        return data.count(b"\n") + (not data.endswith(b"\n"))
    return data.count("\n") + (not data.endswith("\n"))


def strip_bom_and_sniff(chunks: Iterable[bytes]) -> tuple[bytes | None, Iterator[bytes]]:
    """Drop a leading UTF-8 BOM and find the first non-blank byte.

    Returns that byte (b"" when the body holds nothing but blanks, None when the first
    ``SNIFF_LIMIT`` bytes are all blank) and the bytes to parse: without the BOM, but with
    the blank prefix, so that line numbers stay physical.
    """
    source = iter(chunks)
    buffered = bytearray()
    bom_length: int | None = None
    first: bytes | None = b""
    for chunk in source:
        start = len(buffered)
        buffered += chunk
        if bom_length is None:
            if len(buffered) < len(UTF8_BOM) and UTF8_BOM.startswith(buffered):
                continue  # too few bytes to tell whether a BOM is coming
            bom_length = len(UTF8_BOM) if buffered.startswith(UTF8_BOM) else 0
            start = bom_length
        content = bytes(buffered[start:]).lstrip(BLANK_BYTES)
        if content:
            first = content[:1]
            break
        if len(buffered) > SNIFF_LIMIT:
            first = None
            break
    if bom_length is None:
        bom_length = len(UTF8_BOM) if buffered == UTF8_BOM else 0
    return first, _chain(bytes(buffered[bom_length:]), source)


def _chain(head: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if head:
        yield head
    yield from rest


def text_lines(
    chunks: Iterable[bytes], problems: ProblemCollector, *, keep_newline: bool
) -> Iterator[list[str]]:
    """Yield the file's physical lines, a block at a time, in order and without gaps.

    With ``keep_newline`` each line ends with ``"\\n"`` (the CSV reader needs it to keep line
    breaks inside quoted fields); otherwise lines carry no LF. A last line without a final
    newline is still a line.
    """
    lines_before = 0
    pending: list[bytes] = []
    pending_size = 0
    for chunk in chunks:
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)
            pending_size += len(chunk)
            if pending_size > MAX_LINE_BYTES:
                problems.stop(
                    lines_before + 1,
                    None,
                    f"the line is longer than {MAX_LINE_BYTES:,} bytes",
                    Status.MALFORMED,
                )
            continue
        complete = b"".join((*pending, chunk[:cut])) if pending else chunk[:cut]
        rest = chunk[cut:]
        pending, pending_size = ([rest], len(rest)) if rest else ([], 0)
        lines = _decode(complete, lines_before, problems, keep_newline)
        lines_before += len(lines)
        yield lines
    if pending:
        yield _decode(b"".join((*pending, b"\n")), lines_before, problems, keep_newline)


def _decode(
    complete: bytes, lines_before: int, problems: ProblemCollector, keep_newline: bool
) -> list[str]:
    """Decode complete lines (``complete`` ends with LF); bad lines become empty ones."""
    if b"\x00" not in complete:
        try:
            text = complete.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            lines = text.split("\n")
            lines.pop()  # the empty string after the final LF
            return [line + "\n" for line in lines] if keep_newline else lines
    decoded: list[str] = []
    empty = "\n" if keep_newline else ""
    for line_no, raw in enumerate(complete.split(b"\n")[:-1], start=lines_before + 1):
        reason = _byte_problem(raw)
        if reason is None:
            text = raw.decode("utf-8")
            decoded.append(text + "\n" if keep_newline else text)
        else:
            problems.add(line_no, None, reason, Status.MALFORMED)
            decoded.append(empty)
    return decoded


def _byte_problem(raw: bytes) -> str | None:
    nul = raw.find(b"\x00")
    if nul >= 0:
        return f"the line contains a NUL byte at column {_column(raw, nul)}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the line is not valid UTF-8: byte 0x{raw[exc.start]:02x} "
            f"at column {_column(raw, exc.start)} ({exc.reason})"
        )
    return None


def _column(raw: bytes, offset: int) -> int:
    """1-based character column of byte ``offset``, counting what precedes it leniently."""
    return len(raw[:offset].decode("utf-8", errors="replace")) + 1
