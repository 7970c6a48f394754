"""The result of rating one chunk: its charges and per-customer subtotals, as one blob.

The processor writes it (``<batch_id>/<chunk:06d>`` in the results container) and puts only a
small :class:`~shared.contracts.messages.ChunkResult` on the output queue; the controller reads it
back and applies it to the warehouse. Blobs are compressed as payloads are
(:mod:`shared.contracts.blob_compression`).

A processor writes one of two forms, as ``BILLING_RESULT_FORMAT`` says, for the warehouse
the deployment loads into; the controller reads both (and version 1):

* version 3 (``sqlite``, the default): an SQLite database image
  (:mod:`shared.contracts.result_table`) whose ``rows`` table holds exactly the values the
  warehouse's loader stores after the columns the controller adds (order id, batch, chunk,
  currency): ``occurred_at`` already in UTC as the warehouse spells it
  (:mod:`shared.domain.utc_text`), then the rated charge. A SQLite warehouse copies them
  with one ``INSERT … SELECT``, with no Python object per row;
* version 2 (``json``, for PostgreSQL): a JSON document whose rows are arrays of the same
  values, decoded in C by msgspec, which checks every row's shape and types as it builds
  them, the fastest rows for ``COPY``'s ``write_row``.

Both carry ``id_checksum``, the chunk's partial id checksum over its rows' transaction ids
(:func:`shared.domain.transactions.id_checksum_of`): the processor hashes each id once, so
the controller, which all results pass through, does not. Version 2 documents written
before it was added lack it (``None``), and the controller computes it itself.

Version 1 rows (a line number, then ``occurred_at`` as RFC 3339 text) are still read,
converted row by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import Annotated, Any, Literal

import msgspec

from shared.contracts import result_table
from shared.contracts.blob_compression import (
    BlobCompressionError,
    compress,
    decode_json,
    decompress,
)
from shared.contracts.result_table import ResultTableError
from shared.domain.charges import CHARGE_FIELDS, INVOICE_SUMS, CustomerSubtotal, RatedCharge
from shared.domain.transactions import ID_CHECKSUM_MODULUS, id_checksum_of
from shared.domain.utc_text import utc_text, utc_text_of

RESULT_VERSION = result_table.TABLE_VERSION
#: The JSON document's version (``encode_result_rows(..., result_format="json")``).
JSON_VERSION = 2
#: A row of the result blob: when the transaction occurred (UTC text), then its charge.
COLUMNS = result_table.ROW_COLUMNS
SUBTOTAL_COLUMNS = result_table.SUBTOTAL_FIGURES
_charge_values = attrgetter(*CHARGE_FIELDS)
_transaction_id = itemgetter(COLUMNS.index("transaction_id"))
_subtotal_values = attrgetter(*INVOICE_SUMS)

ResultRow = tuple[str, str, str, str, str, int, int, int, int, int, int, int]
"""``occurred_at_utc, transaction_id, customer_id, sku, region, quantity, unit_price, gross,
discount, net, tax, total``: :data:`COLUMNS`."""
Subtotal = tuple[int, int, int, int, int, int, int]
"""A customer's :data:`SUBTOTAL_COLUMNS`."""
_V1_COLUMNS = ("line", "occurred_at", *CHARGE_FIELDS)
_V1Row = tuple[int, str, str, str, str, str, int, int, int, int, int, int, int]


class ChunkResultError(ValueError):
    """A result blob that is not a chunk result of a version this code understands."""


class _Header(msgspec.Struct, frozen=True, tag_field="v"):
    """What every version's document holds besides its rows."""

    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    columns: tuple[str, ...]
    subtotal_columns: tuple[str, ...]
    subtotals: dict[str, Subtotal]


#: Below 2**64 too, which :func:`decode_result_rows` checks (msgspec bounds stop at int64).
IdChecksum = Annotated[int, msgspec.Meta(ge=0)]


class _Document(_Header, frozen=True, tag=JSON_VERSION):
    rows: list[ResultRow]
    id_checksum: IdChecksum | None = None


class _DocumentV1(_Header, frozen=True, tag=1):
    rows: list[_V1Row]


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Document | _DocumentV1)


@dataclass(frozen=True, slots=True)
class ChargeRow:
    """One rated transaction as the warehouse stores it: when it occurred, and its charge."""

    occurred_at: datetime
    charge: RatedCharge


@dataclass(frozen=True)
class RatedChunk:
    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    charges: list[ChargeRow]
    subtotals: dict[str, CustomerSubtotal]


def result_blob_prefix(batch_id: str) -> str:
    """What every result blob of the batch's name starts with."""
    return f"{batch_id}/"


def result_blob_name(batch_id: str, chunk: int) -> str:
    return f"{result_blob_prefix(batch_id)}{chunk:06d}"


@dataclass(frozen=True)
class RatedRows:
    """A result blob as rows: what the controller loads, with no object per charge.

    ``rows`` are tuples in :data:`COLUMNS` order (for a version 3 result a
    :class:`~shared.contracts.result_table.ResultTable`, which a SQLite warehouse copies
    without making them); ``subtotals`` map a customer id to its figures in
    :data:`SUBTOTAL_COLUMNS` order; ``id_checksum`` is the rows' partial id checksum, None
    when the document predates it.
    """

    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    rows: Sequence[ResultRow]
    subtotals: Mapping[str, Subtotal]
    id_checksum: int | None


def encode_result(
    *,
    batch_id: str,
    chunk: int,
    currency: str,
    pricebook_version: str,
    charges: Sequence[tuple[datetime, RatedCharge]],
    subtotals: Mapping[str, CustomerSubtotal],
) -> bytes:
    """The result blob's bytes from rated charges; ``charges`` are (occurred_at, charge)."""
    return encode_result_rows(
        batch_id=batch_id,
        chunk=chunk,
        currency=currency,
        pricebook_version=pricebook_version,
        rows=[(utc_text(occurred_at), *_charge_values(charge)) for occurred_at, charge in charges],
        subtotals={customer: _subtotal_values(s) for customer, s in subtotals.items()},
    )


ResultFormat = Literal["sqlite", "json"]
"""How a processor writes its results (``BILLING_RESULT_FORMAT``): a version 3 image or a
version 2 JSON document."""


def encode_result_rows(
    *,
    batch_id: str,
    chunk: int,
    currency: str,
    pricebook_version: str,
    rows: Sequence[Sequence[Any]],
    subtotals: Mapping[str, Sequence[int]],
    result_format: ResultFormat = "sqlite",
) -> bytes:
    """The result blob's bytes from rows in :data:`COLUMNS` order (the integer rater's),
    with their partial id checksum: an image (version 3), or for ``json`` the JSON document
    (version 2) a PostgreSQL warehouse's ``COPY`` takes faster."""
    id_checksum = id_checksum_of(map(_transaction_id, rows))
    if result_format == "sqlite":
        header = result_table.Header(batch_id, chunk, currency, pricebook_version, id_checksum)
        return compress(result_table.write_image(header, rows, subtotals))
    document = {
        "v": JSON_VERSION,
        "batch_id": batch_id,
        "chunk": chunk,
        "currency": currency,
        "pricebook_version": pricebook_version,
        "columns": COLUMNS,
        "rows": rows,
        "subtotal_columns": SUBTOTAL_COLUMNS,
        "subtotals": dict(subtotals),  # msgspec encodes a dict, not any mapping, as an object
        "id_checksum": id_checksum,
    }
    return compress(_encoder.encode(document))


def decode_result(data: bytes) -> RatedChunk:
    """Read a result blob back as charge objects. Raises :class:`ChunkResultError`."""
    rated = decode_result_rows(data)
    return RatedChunk(
        batch_id=rated.batch_id,
        chunk=rated.chunk,
        currency=rated.currency,
        pricebook_version=rated.pricebook_version,
        charges=[
            ChargeRow(datetime.fromisoformat(f"{row[0]}+00:00"), RatedCharge(*row[1:]))
            for row in rated.rows
        ],
        subtotals={
            customer: CustomerSubtotal(customer, *figures)
            for customer, figures in rated.subtotals.items()
        },
    )


def decode_result_rows(data: bytes) -> RatedRows:
    """Read a result blob back as rows. Raises :class:`ChunkResultError`.

    A version 3 image must have exactly the tables of
    :data:`~shared.contracts.result_table.SCHEMA` (strict tables: SQLite checked every
    value's type as the processor wrote it); a JSON document's decoder checks the version
    and the type of every value as it reads them, and this its column names. The values
    are not checked further: the blob's sha256 was checked against the processor's message
    already, and the warehouse refuses the rest.
    """
    try:
        document_bytes = decompress(data)
    except BlobCompressionError as exc:
        raise ChunkResultError(f"not a compressed chunk result: {exc}") from None
    if document_bytes.startswith(result_table.MAGIC):
        return _rows_of_table(document_bytes)
    document = decode_json(document_bytes, _decoder, ChunkResultError, "chunk result")
    expected = COLUMNS if isinstance(document, _Document) else _V1_COLUMNS
    if document.columns != expected:
        raise ChunkResultError(f"unexpected result columns {list(document.columns)!r}")
    if document.subtotal_columns != SUBTOTAL_COLUMNS:
        raise ChunkResultError(f"unexpected subtotal columns {list(document.subtotal_columns)!r}")
    rows = document.rows if isinstance(document, _Document) else _rows_of_v1(document.rows)
    id_checksum = document.id_checksum if isinstance(document, _Document) else None
    return RatedRows(
        batch_id=document.batch_id,
        chunk=document.chunk,
        currency=document.currency,
        pricebook_version=document.pricebook_version,
        rows=rows,
        subtotals=document.subtotals,
        id_checksum=_checked_checksum(id_checksum, "at `$.id_checksum`"),
    )


def _rows_of_table(image: bytes) -> RatedRows:
    try:
        header, rows, subtotals = result_table.read_image(image)
    except ResultTableError as exc:
        raise ChunkResultError(f"malformed chunk result: {exc}") from None
    return RatedRows(
        batch_id=header.batch_id,
        chunk=header.chunk,
        currency=header.currency,
        pricebook_version=header.pricebook_version,
        rows=rows,
        subtotals=subtotals,  # type: ignore[arg-type]  # seven figures a customer: SCHEMA
        id_checksum=_checked_checksum(header.id_checksum, "in its header"),
    )


def _checked_checksum(id_checksum: int | None, where: str) -> int | None:
    if id_checksum is not None and id_checksum >= ID_CHECKSUM_MODULUS:
        raise ChunkResultError(
            f"malformed chunk result: an id checksum must be below 2**64 - {where}"
        )
    return id_checksum


def _rows_of_v1(rows: list[_V1Row]) -> list[ResultRow]:
    try:
        return [(utc_text_of(row[1]), *row[2:]) for row in rows]
    except ValueError as exc:
        raise ChunkResultError(f"malformed chunk result: {exc}") from None
