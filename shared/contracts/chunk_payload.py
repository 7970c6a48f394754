"""The claim-check payload of one chunk: its validated transactions, as one compressed JSON blob.

The initiator writes one payload blob per chunk (``<batch_id>/<chunk:06d>`` in the payloads
container) and puts only a reference on the work queue (the claim check, docs/patterns.md).
A processor reads it back with :func:`decode_chunk_rows`, as rows for the rater (or
:func:`decode_chunk`, as transactions).

Why this encoding: one JSON document whose rows are arrays (not one object per line) costs a
single encode and decode call in C per chunk (msgspec, which also checks every row's types
as it decodes) and no repeated field names, and compression shrinks the repetitive ids and
timestamps about four-fold (:mod:`shared.contracts.blob_compression`: Zstandard level 1,
``python -m bench.intake`` prints the levels' table). The initiator is CPU-bound and
payload blobs live only until their batch is processed, so the cheapest level wins; the
compressor releases the GIL, so it overlaps with parsing.

Each row keeps the transaction's physical line in the batch file, so a processor can name
the line of a transaction it cannot rate.

``occurred_at`` is written as the batch file spelled it (``Transaction.occurred_at_text``,
e.g. ``...T10:00:00.250Z``), falling back to ``isoformat()`` for a transaction built from a
datetime alone. The parser accepted that text only after ``datetime.fromisoformat`` read it,
so :func:`decode_chunk` reads it back to the same aware datetime either way; copying it
saves formatting every timestamp again (~0.8 µs a row). The processor respells it in UTC
as it rates the row (:mod:`shared.domain.utc_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from shared.contracts.blob_compression import DEFAULT_LEVEL, compress, decode_document
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
#: Compression level for payload blobs (see the module docstring for the measurement).
DEFAULT_COMPRESSLEVEL = DEFAULT_LEVEL

NumberedTransaction = tuple[int, Transaction]
"""A transaction with its physical line number in the batch file (the header is line 1)."""
PayloadRow = tuple[int, str, str, str, int, str, str]
"""``line, transaction_id, customer_id, sku, quantity, region, occurred_at``: :data:`COLUMNS`."""


class ChunkPayloadError(ValueError):
    """A payload blob that is not a chunk payload of a version this code understands."""


@dataclass(frozen=True)
class ChunkPayload:
    batch_id: str
    chunk: int
    rows: list[NumberedTransaction]


@dataclass(frozen=True)
class ChunkRows:
    """A payload as its rows: tuples of plain values in :data:`COLUMNS` order."""

    batch_id: str
    chunk: int
    rows: list[PayloadRow]


class _Document(msgspec.Struct, frozen=True, tag_field="v", tag=PAYLOAD_VERSION):
    batch_id: str
    chunk: int
    columns: tuple[str, ...]
    rows: list[PayloadRow]


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Document)


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

    This half holds the GIL throughout (building the rows, encoding them), which is why the
    initiator runs it on the parsing thread and hands only the other half, which the
    compressor runs without the GIL, to its upload threads.
    """
    return _encode_document(batch_id, chunk, payload_rows(rows))


def rows_json(rows: Sequence[NumberedTransaction]) -> bytes:
    """The JSON array of a chunk's :func:`payload_rows`: one part of a document that
    :func:`chunk_json_of_parts` puts together (an intake helper checks part of a chunk)."""
    return _encoder.encode(payload_rows(rows))


def chunk_json_of_parts(batch_id: str, chunk: int, parts: Sequence[bytes]) -> bytes:
    """:func:`chunk_json` of the rows of ``parts`` (:func:`rows_json` arrays), in order: the
    same bytes as ``chunk_json`` of all their rows at once, without decoding any part."""
    if not parts:
        raise ValueError("a chunk needs at least one part")
    # Each part is "[row,row,...]" with no whitespace (msgspec writes none): the chunk's
    # array is their insides joined by commas, inserted as it is (msgspec.Raw).
    rows = msgspec.Raw(b"[" + b",".join(part[1:-1] for part in parts) + b"]")
    return _encode_document(batch_id, chunk, rows)


def _encode_document(batch_id: str, chunk: int, rows: list[list[Any]] | msgspec.Raw) -> bytes:
    """The one shape of a payload document, whichever way its rows came."""
    document = {
        "v": PAYLOAD_VERSION,
        "batch_id": batch_id,
        "chunk": chunk,
        "columns": COLUMNS,
        "rows": rows,
    }
    return _encoder.encode(document)


def compress_chunk_json(document: bytes, *, compresslevel: int = DEFAULT_COMPRESSLEVEL) -> bytes:
    """Compress a :func:`chunk_json` document (equal chunks give equal bytes)."""
    return compress(document, level=compresslevel)


def payload_rows(rows: Sequence[NumberedTransaction]) -> list[list[Any]]:
    """The rows of a payload document, in :data:`COLUMNS` order: what a processor decodes."""
    return [
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
    ]


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
            for line, tid, customer, sku, quantity, region, occurred_at in document.rows
        ]
    except ValueError as exc:
        raise ChunkPayloadError(f"malformed chunk payload: {exc}") from None
    return ChunkPayload(batch_id=document.batch_id, chunk=document.chunk, rows=rows)


def decode_chunk_rows(data: bytes) -> ChunkRows:
    """Read a payload blob as rows, for rating without an object per transaction.

    Every value has its type (the decoder checks them); ``occurred_at`` stays the text the
    batch file spelled. Raises :class:`ChunkPayloadError`.
    """
    document = _document(data)
    return ChunkRows(batch_id=document.batch_id, chunk=document.chunk, rows=document.rows)


def _document(data: bytes) -> _Document:
    """The payload's document, its version, columns and every row's types checked."""
    document = decode_document(data, _decoder, ChunkPayloadError, "chunk payload")
    if document.columns != COLUMNS:
        raise ChunkPayloadError(f"unexpected payload columns {list(document.columns)!r}")
    return document
