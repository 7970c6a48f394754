"""The result of rating one chunk: its charges and per-customer subtotals, as one blob.

The processor writes it (``<batch_id>/<chunk:06d>`` in the results container) and puts only a
small :class:`~shared.contracts.messages.ChunkResult` on the output queue; the controller reads it
back and applies it to the warehouse. The same shape as the payload blob
(:mod:`shared.contracts.chunk_payload`): one gzip'd JSON document whose rows are arrays, so a chunk
costs one ``json`` call each way.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

from shared.domain.charges import CHARGE_FIELDS, INVOICE_SUMS, CustomerSubtotal, RatedCharge

RESULT_VERSION = 1
#: A row of the result blob: the transaction's line and time, then the rated charge.
COLUMNS = ("line", "occurred_at", *CHARGE_FIELDS)
SUBTOTAL_COLUMNS = INVOICE_SUMS
_charge_values = attrgetter(*CHARGE_FIELDS)
_subtotal_values = attrgetter(*INVOICE_SUMS)


class ChunkResultError(ValueError):
    """A result blob that is not a chunk result of a version this code understands."""


@dataclass(frozen=True, slots=True)
class ChargeRow:
    """One rated transaction as the warehouse stores it: where it was, when, and its charge."""

    line: int
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


def result_blob_name(batch_id: str, chunk: int) -> str:
    return f"{batch_id}/{chunk:06d}"


@dataclass(frozen=True)
class RatedRows:
    """A result blob as rows: what the controller loads, with no object per charge.

    ``rows`` are lists in :data:`COLUMNS` order with ``occurred_at`` as RFC 3339 text;
    ``subtotals`` map a customer id to its figures in :data:`SUBTOTAL_COLUMNS` order.
    """

    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    rows: list[list[Any]]
    subtotals: dict[str, list[int]]


def encode_result(
    *,
    batch_id: str,
    chunk: int,
    currency: str,
    pricebook_version: str,
    charges: Sequence[tuple[int, datetime, RatedCharge]],
    subtotals: Mapping[str, CustomerSubtotal],
) -> bytes:
    """The result blob's bytes from rated charges; ``charges`` are (line, occurred_at, charge)."""
    return encode_result_rows(
        batch_id=batch_id,
        chunk=chunk,
        currency=currency,
        pricebook_version=pricebook_version,
        rows=[
            [line, occurred_at.isoformat(), *_charge_values(charge)]
            for line, occurred_at, charge in charges
        ],
        subtotals={customer: list(_subtotal_values(s)) for customer, s in subtotals.items()},
    )


def encode_result_rows(
    *,
    batch_id: str,
    chunk: int,
    currency: str,
    pricebook_version: str,
    rows: Sequence[Sequence[Any]],
    subtotals: Mapping[str, Sequence[int]],
) -> bytes:
    """The result blob's bytes from rows in :data:`COLUMNS` order (the integer rater's)."""
    document = {
        "v": RESULT_VERSION,
        "batch_id": batch_id,
        "chunk": chunk,
        "currency": currency,
        "pricebook_version": pricebook_version,
        "columns": COLUMNS,
        "rows": rows,
        "subtotal_columns": SUBTOTAL_COLUMNS,
        "subtotals": subtotals,
    }
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return gzip.compress(text.encode(), compresslevel=1, mtime=0)


def decode_result(data: bytes) -> RatedChunk:
    """Read a result blob back as charge objects. Raises :class:`ChunkResultError`."""
    rated = decode_result_rows(data)
    try:
        charges = [
            ChargeRow(line, datetime.fromisoformat(at), RatedCharge(*rest))
            for line, at, *rest in rated.rows
        ]
        subtotals = {
            customer: CustomerSubtotal(customer, *figures)
            for customer, figures in rated.subtotals.items()
        }
    except (TypeError, ValueError) as exc:
        raise ChunkResultError(f"malformed chunk result: {exc}") from None
    return RatedChunk(
        batch_id=rated.batch_id,
        chunk=rated.chunk,
        currency=rated.currency,
        pricebook_version=rated.pricebook_version,
        charges=charges,
        subtotals=subtotals,
    )


def decode_result_rows(data: bytes) -> RatedRows:
    """Read a result blob back as rows, values untouched. Raises :class:`ChunkResultError`.

    Checks the version, the columns and the shape of every row (its length), not the
    values: the blob's sha256 was checked against the processor's message already, and
    the warehouse refuses a value of the wrong type.
    """
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, EOFError, ValueError) as exc:
        raise ChunkResultError(f"not a gzip'd JSON chunk result: {exc}") from None
    if not isinstance(document, dict) or document.get("v") != RESULT_VERSION:
        raise ChunkResultError("unsupported chunk result version")
    if tuple(document.get("columns", ())) != COLUMNS:
        raise ChunkResultError(f"unexpected result columns {document.get('columns')!r}")
    try:
        rows: list[list[Any]] = document["rows"]
        width = len(COLUMNS)
        bad = next((row for row in rows if len(row) != width), None)
        if bad is not None:
            raise ValueError(f"a row of {len(bad)} values, not {width}: {bad!r}")
        subtotals: dict[str, list[int]] = document["subtotals"]
        if any(len(figures) != len(SUBTOTAL_COLUMNS) for figures in subtotals.values()):
            raise ValueError("a subtotal without all of " + ", ".join(SUBTOTAL_COLUMNS))
        return RatedRows(
            batch_id=document["batch_id"],
            chunk=document["chunk"],
            currency=document["currency"],
            pricebook_version=document["pricebook_version"],
            rows=rows,
            subtotals=subtotals,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ChunkResultError(f"malformed chunk result: {exc}") from None
