"""The result of rating one chunk: its charges and their invoice sums, as one blob.

The processor writes it (``<batch_id>/<chunk:06d>`` in the results container) and puts only a
small :class:`~shared.contracts.messages.ChunkResult` on the output queue; the controller reads it
back and applies it to the warehouse. Blobs are compressed as payloads are
(:mod:`shared.contracts.blob_compression`).

A processor writes one of two forms, as ``BILLING_RESULT_FORMAT`` says, for the warehouse
the deployment loads into; the controller reads both (and version 1):

* version 4 (``sqlite``, the default): an SQLite database image
  (:mod:`shared.contracts.result_table`) whose ``rows`` table holds exactly the values the
  warehouse's loader stores after the columns the controller adds (order id, batch, chunk,
  currency): ``occurred_at`` already in UTC as the warehouse spells it
  (:mod:`shared.domain.utc_text`), then the rated charge. A SQLite warehouse copies them
  with one ``INSERT … SELECT``, with no Python object per row;
* version 4 (``json``, for PostgreSQL): a JSON document whose rows are arrays of the same
  values, decoded in C by msgspec, which checks every row's shape and types as it builds
  them, the fastest rows for ``COPY``'s ``write_row``.

Both carry ``id_checksum``, the chunk's partial id checksum over its rows' transaction ids
(:func:`shared.domain.transactions.id_checksum_of`): the processor hashes each id once, so
the controller, which all results pass through, does not; and ``invoice_sums``, the
chunk's :data:`~shared.domain.charges.INVOICE_SUMS` over all its rows, one figure each,
which the controller keeps on the chunk's applied mark as the figures the batch's invoices
must add up to (:mod:`controller.reconciliation`).

Older processors' results are still read: a version 3 image or a version 2 JSON document
carries one subtotal per customer instead of the sums, and the reader sums them (a version 2
document written before ``id_checksum`` lacks it, ``None``, and the controller computes it);
version 1 rows (a line number, then ``occurred_at`` as RFC 3339 text) are converted row by
row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from shared.domain.charges import (
    CHARGE_FIELDS,
    INVOICE_SUMS,
    CustomerSubtotal,
    RatedCharge,
    invoice_sums_of,
)
from shared.domain.transactions import ID_CHECKSUM_MODULUS, id_checksum_of
from shared.domain.utc_text import utc_text, utc_text_of

RESULT_VERSION = result_table.TABLE_VERSION
#: The JSON document's version (``encode_result_rows(..., result_format="json")``).
JSON_VERSION = 4
#: A row of the result blob: when the transaction occurred (UTC text), then its charge.
COLUMNS = result_table.ROW_COLUMNS
#: The figures of ``invoice_sums`` (and of an older document's per-customer subtotals).
SUBTOTAL_COLUMNS = INVOICE_SUMS
_charge_values = attrgetter(*CHARGE_FIELDS)
_transaction_id = itemgetter(COLUMNS.index("transaction_id"))

ResultRow = tuple[str, str, str, str, str, int, int, int, int, int, int, int]
"""``occurred_at_utc, transaction_id, customer_id, sku, region, quantity, unit_price, gross,
discount, net, tax, total``: :data:`COLUMNS`."""
Subtotal = tuple[int, int, int, int, int, int, int]
"""A customer's :data:`SUBTOTAL_COLUMNS` (versions 1 and 2), or a chunk's invoice sums."""
_V1_COLUMNS = ("line", "occurred_at", *CHARGE_FIELDS)
_V1Row = tuple[int, str, str, str, str, str, int, int, int, int, int, int, int]


class ChunkResultError(ValueError):
    """A result blob that is not a chunk result of a version this code understands."""


class _Header(msgspec.Struct, frozen=True, tag_field="v"):
    """What every version's document holds besides its rows and sums."""

    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    columns: tuple[str, ...]


#: Below 2**64 too, which :func:`decode_result_rows` checks (msgspec bounds stop at int64).
IdChecksum = Annotated[int, msgspec.Meta(ge=0)]


class _Document(_Header, frozen=True, tag=JSON_VERSION):
    rows: list[ResultRow]
    id_checksum: IdChecksum
    invoice_sum_columns: tuple[str, ...]
    invoice_sums: Subtotal


class _Subtotaled(_Header, frozen=True):
    """An older processor's document: one subtotal per customer rather than the sums."""

    subtotal_columns: tuple[str, ...]
    subtotals: dict[str, Subtotal]


class _DocumentV2(_Subtotaled, frozen=True, tag=2):
    rows: list[ResultRow]
    id_checksum: IdChecksum | None = None


class _DocumentV1(_Subtotaled, frozen=True, tag=1):
    rows: list[_V1Row]


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Document | _DocumentV2 | _DocumentV1)


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
    #: the chunk's :data:`~shared.domain.charges.INVOICE_SUMS` over all its charges
    invoice_sums: tuple[int, ...]


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
    without making them); ``invoice_sums`` are the rows' :data:`SUBTOTAL_COLUMNS` summed
    over all of them, as the processor computed them; ``id_checksum`` is the rows' partial
    id checksum, None when the document predates it.
    """

    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    rows: Sequence[ResultRow]
    invoice_sums: tuple[int, ...]
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
    """The result blob's bytes from rated charges; ``charges`` are (occurred_at, charge) and
    ``subtotals`` their per-customer sums, summed here into the chunk's invoice sums."""
    return encode_result_rows(
        batch_id=batch_id,
        chunk=chunk,
        currency=currency,
        pricebook_version=pricebook_version,
        rows=[(utc_text(occurred_at), *_charge_values(charge)) for occurred_at, charge in charges],
        invoice_sums=invoice_sums_of(subtotals.values()),
    )


ResultFormat = Literal["sqlite", "json"]
"""How a processor writes its results (``BILLING_RESULT_FORMAT``): a version 4 image or a
version 4 JSON document."""


def encode_result_rows(
    *,
    batch_id: str,
    chunk: int,
    currency: str,
    pricebook_version: str,
    rows: Sequence[Sequence[Any]],
    invoice_sums: Sequence[int],
    result_format: ResultFormat = "sqlite",
) -> bytes:
    """The result blob's bytes from rows in :data:`COLUMNS` order (the integer rater's),
    with their partial id checksum and ``invoice_sums`` (their :data:`SUBTOTAL_COLUMNS`
    summed): an image, or for ``json`` the JSON document a PostgreSQL warehouse's ``COPY``
    takes faster (version 4 both)."""
    if len(invoice_sums) != len(SUBTOTAL_COLUMNS):
        raise ValueError(f"a chunk's invoice sums are {len(SUBTOTAL_COLUMNS)} figures")
    id_checksum = id_checksum_of(map(_transaction_id, rows))
    sums = tuple(invoice_sums)
    if result_format == "sqlite":
        header = result_table.Header(
            batch_id, chunk, currency, pricebook_version, id_checksum, sums
        )
        return compress(result_table.write_image(header, rows))
    document = {
        "v": JSON_VERSION,
        "batch_id": batch_id,
        "chunk": chunk,
        "currency": currency,
        "pricebook_version": pricebook_version,
        "columns": COLUMNS,
        "rows": rows,
        "id_checksum": id_checksum,
        "invoice_sum_columns": SUBTOTAL_COLUMNS,
        "invoice_sums": sums,
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
        invoice_sums=rated.invoice_sums,
    )


def decode_result_rows(data: bytes) -> RatedRows:
    """Read a result blob back as rows. Raises :class:`ChunkResultError`.

    An image must have exactly the tables of :data:`~shared.contracts.result_table.SCHEMA`
    (or a version 3 image's) (strict tables: SQLite checked every
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
    expected = _V1_COLUMNS if isinstance(document, _DocumentV1) else COLUMNS
    if document.columns != expected:
        raise ChunkResultError(f"unexpected result columns {list(document.columns)!r}")
    if isinstance(document, _Document):
        if document.invoice_sum_columns != SUBTOTAL_COLUMNS:
            raise ChunkResultError(
                f"unexpected invoice sum columns {list(document.invoice_sum_columns)!r}"
            )
        sums: tuple[int, ...] = document.invoice_sums
    else:
        if document.subtotal_columns != SUBTOTAL_COLUMNS:
            raise ChunkResultError(
                f"unexpected subtotal columns {list(document.subtotal_columns)!r}"
            )
        sums = _summed(document.subtotals.values())
    rows = _rows_of_v1(document.rows) if isinstance(document, _DocumentV1) else document.rows
    id_checksum = None if isinstance(document, _DocumentV1) else document.id_checksum
    return RatedRows(
        batch_id=document.batch_id,
        chunk=document.chunk,
        currency=document.currency,
        pricebook_version=document.pricebook_version,
        rows=rows,
        invoice_sums=sums,
        id_checksum=_checked_checksum(id_checksum, "at `$.id_checksum`"),
    )


def _summed(subtotals: Iterable[Subtotal]) -> tuple[int, ...]:
    """An older document's per-customer subtotals summed into the chunk's invoice sums."""
    totals = [0] * len(SUBTOTAL_COLUMNS)
    for figures in subtotals:
        for index, figure in enumerate(figures):
            totals[index] += figure
    return tuple(totals)


def _rows_of_table(image: bytes) -> RatedRows:
    try:
        header, rows = result_table.read_image(image)
    except ResultTableError as exc:
        raise ChunkResultError(f"malformed chunk result: {exc}") from None
    return RatedRows(
        batch_id=header.batch_id,
        chunk=header.chunk,
        currency=header.currency,
        pricebook_version=header.pricebook_version,
        rows=rows,
        invoice_sums=header.invoice_sums,
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
