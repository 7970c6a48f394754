"""The claim-check payload of one chunk: its validated transactions, as one gzip'd JSON blob.

The initiator writes one payload blob per chunk (``<batch_id>/<chunk:06d>`` in the payloads
container) and puts only a reference on the work queue (the claim check, docs/patterns.md).
A processor reads it back with :func:`decode_chunk_rows`, as rows for the rater (or
:func:`decode_chunk`, as transactions).

Why this encoding: one JSON document whose rows are arrays (not one object per line) costs a
single ``json.dumps``/``json.loads`` call in C per chunk and no repeated field names, and
gzip shrinks the repetitive ids and timestamps about four-fold. Level 1 was chosen by
measurement (``python -m bench.intake`` prints the table): a 2,000-transaction chunk is
about 175 KB of JSON, which level 1 cuts to 25 % for about 1 ms of compression, level 6 to
20 % for about 3 ms and level 9 to 20 % for about 11 ms (building the JSON itself takes
about 1.5-2 ms). The initiator is CPU-bound and payload blobs live only until their batch is
processed, so the cheap level wins; zlib releases the GIL, so it overlaps with parsing.

Each row keeps the transaction's physical line in the batch file, so a processor can name
the line of a transaction it cannot rate.

``occurred_at`` is written as the batch file spelled it (``Transaction.occurred_at_text``,
e.g. ``...T10:00:00.250Z``), falling back to ``isoformat()`` for a transaction built from a
datetime alone. The parser accepted that text only after ``datetime.fromisoformat`` read it,
so :func:`decode_chunk` reads it back to the same aware datetime either way; copying it
saves formatting every timestamp again (~0.8 µs a row, about a third of the encoding).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared.domain.transactions import Transaction

PAYLOAD_VERSION = 1
COLUMNS = (
    "line",
    "transaction_id",
    "customer_id",
    "sku",
    "quantity",
    "region",
    "occurred_at",
)
#: gzip level for payload blobs (see the module docstring for the measurement).
DEFAULT_COMPRESSLEVEL = 1

NumberedTransaction = tuple[int, Transaction]
"""A transaction with its physical line number in the batch file (the header is line 1)."""


class ChunkPayloadError(ValueError):
    """A payload blob that is not a chunk payload of a version this code understands."""


@dataclass(frozen=True)
class ChunkPayload:
    batch_id: str
    chunk: int
    rows: list[NumberedTransaction]


@dataclass(frozen=True)
class ChunkRows:
    """A payload as its rows: lists of plain values in :data:`COLUMNS` order."""

    batch_id: str
    chunk: int
    rows: list[list[Any]]


#: An ``occurred_at`` every warehouse parses as Python does: PostgreSQL rounds a fraction
#: past microseconds (Python truncates it) and refuses offsets from 16 hours on.
_is_warehouse_timestamp = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-](?:0\d|1[0-5]):\d{2})", re.ASCII
).fullmatch
_OCCURRED_AT = COLUMNS.index("occurred_at")


def payload_blob_name(batch_id: str, chunk: int) -> str:
    """``<batch_id>/<chunk:06d>``: a batch's chunks list together and in order."""
    return f"{batch_id}/{chunk:06d}"


def encode_chunk(
    batch_id: str,
    chunk: int,
    rows: Sequence[NumberedTransaction],
    *,
    compresslevel: int = DEFAULT_COMPRESSLEVEL,
) -> bytes:
    """The payload blob's bytes: :func:`chunk_json` then :func:`compress_chunk_json`."""
    return compress_chunk_json(chunk_json(batch_id, chunk, rows), compresslevel=compresslevel)


def chunk_json(batch_id: str, chunk: int, rows: Sequence[NumberedTransaction]) -> bytes:
    """The payload's JSON document (UTF-8), before compression.

    This half holds the GIL throughout (building the rows, ``json.dumps``), which is why
    the initiator runs it on the parsing thread and hands only the other half, which zlib
    runs without the GIL, to its upload threads.
    """
    document = {
        "v": PAYLOAD_VERSION,
        "batch_id": batch_id,
        "chunk": chunk,
        "columns": COLUMNS,
        "rows": [
            [
                line,
                tx.transaction_id,
                tx.customer_id,
                tx.sku,
                tx.quantity,
                tx.region,
                tx.occurred_at_text or tx.occurred_at.isoformat(),
            ]
            for line, tx in rows
        ],
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def compress_chunk_json(document: bytes, *, compresslevel: int = DEFAULT_COMPRESSLEVEL) -> bytes:
    """gzip a :func:`chunk_json` document. ``mtime=0`` keeps equal chunks byte-for-byte equal."""
    return gzip.compress(document, compresslevel=compresslevel, mtime=0)


def decode_chunk(data: bytes) -> ChunkPayload:
    """Read a payload blob back into numbered transactions. Raises :class:`ChunkPayloadError`."""
    document = _document(data)
    try:
        rows = [
            (
                line,
                Transaction(
                    transaction_id=tid,
                    customer_id=customer,
                    sku=sku,
                    quantity=quantity,
                    region=region,
                    occurred_at=datetime.fromisoformat(occurred_at),
                ),
            )
            for line, tid, customer, sku, quantity, region, occurred_at in document["rows"]
        ]
        return ChunkPayload(batch_id=document["batch_id"], chunk=document["chunk"], rows=rows)
    except (KeyError, TypeError, ValueError) as exc:
        raise ChunkPayloadError(f"malformed chunk payload: {exc}") from None


def decode_chunk_rows(data: bytes) -> ChunkRows:
    """Read a payload blob as rows, for rating without an object per transaction.

    ``occurred_at`` stays text, in a spelling every warehouse parses to the instant Python
    reads from it: the rare text with more than six fractional digits or an offset of 16
    hours or more is rewritten in UTC with microseconds. Raises :class:`ChunkPayloadError`.
    """
    document = _document(data)
    try:
        rows: list[list[Any]] = document["rows"]
        at = _OCCURRED_AT
        for row in rows:
            if not _is_warehouse_timestamp(row[at]):
                row[at] = datetime.fromisoformat(row[at]).astimezone(UTC).isoformat()
        return ChunkRows(batch_id=document["batch_id"], chunk=document["chunk"], rows=rows)
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        raise ChunkPayloadError(f"malformed chunk payload: {exc}") from None


def _document(data: bytes) -> dict[str, Any]:
    """The payload's JSON document, its version and columns checked."""
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, EOFError, ValueError) as exc:
        raise ChunkPayloadError(f"not a gzip'd JSON chunk payload: {exc}") from None
    if not isinstance(document, dict) or document.get("v") != PAYLOAD_VERSION:
        raise ChunkPayloadError(f"unsupported chunk payload version {_version_of(document)!r}")
    if tuple(document.get("columns", ())) != COLUMNS:
        raise ChunkPayloadError(f"unexpected payload columns {document.get('columns')!r}")
    return document


def _version_of(document: object) -> object:
    return document.get("v") if isinstance(document, dict) else type(document).__name__
