"""Which format and compression a request body claims, from its Content-Type and Content-Encoding.

The answer is decided before a byte of the body is read, so an unsupported type costs
nothing. Generic types (or none) leave the format to sniffing: the first non-blank byte
``{`` means JSON Lines, anything else CSV.
"""

from __future__ import annotations

from enum import Enum

from initiator.intake.problems import ProblemCollector, Status


class BatchFormat(Enum):
    CSV = "csv"
    JSON_LINES = "jsonl"
    SNIFF = "sniff"
    """Generic or missing Content-Type: decide from the first non-blank byte."""


_FORMATS_BY_TYPE = {
    "text/csv": BatchFormat.CSV,
    "application/x-ndjson": BatchFormat.JSON_LINES,
    "application/jsonl": BatchFormat.JSON_LINES,
    "application/json-lines": BatchFormat.JSON_LINES,
    # Generic types: clients such as `curl --data-binary` send these for any file; a gzip
    # file posted as-is often goes out as application/gzip.
    "application/octet-stream": BatchFormat.SNIFF,
    "text/plain": BatchFormat.SNIFF,
    "application/gzip": BatchFormat.SNIFF,
    "application/x-gzip": BatchFormat.SNIFF,
}
_UTF8_CHARSETS = {"utf-8", "utf8", "us-ascii"}
_GZIP_ENCODINGS = {"gzip", "x-gzip"}
_NO_ENCODINGS = {"", "identity"}


def format_for(content_type: str | None, problems: ProblemCollector) -> BatchFormat | None:
    """The declared format, or None (with a 415 problem recorded) if it is not supported."""
    if content_type is None or not content_type.strip():
        return BatchFormat.SNIFF
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    batch_format = _FORMATS_BY_TYPE.get(media_type.lower())
    if batch_format is None:
        supported = ", ".join(sorted(_FORMATS_BY_TYPE))
        problems.add(
            None,
            "Content-Type",
            f"unsupported content type {media_type!r}; use one of: {supported}",
            Status.UNSUPPORTED,
        )
        return None
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in _UTF8_CHARSETS:
            problems.add(
                None,
                "Content-Type",
                f"unsupported charset {charset!r}; batch files must be UTF-8",
                Status.UNSUPPORTED,
            )
            return None
    return batch_format


def gzip_declared(content_encoding: str | None, problems: ProblemCollector) -> bool | None:
    """Whether the body is declared gzip; None (with a 415 problem) for other encodings."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in _GZIP_ENCODINGS:
        return True
    if encoding in _NO_ENCODINGS:
        return False
    problems.add(
        None,
        "Content-Encoding",
        f"unsupported content encoding {content_encoding!r}; send the body as is or gzip",
        Status.UNSUPPORTED,
    )
    return None
