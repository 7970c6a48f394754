"""A chunk result as an SQLite database image (result version 3): rows a warehouse loads in C.

The controller is the one process every charge passes through, and on two cores it is the
pipeline's critical path. Decoding a JSON result made a Python tuple of twelve objects per
charge, and the SQLite warehouse's insert bound them back one by one: most of the
controller's CPU a row (``bench.end_to_end`` reports it per role). So a processor
writes its rows into an in-memory SQLite database with :data:`SCHEMA` and ships the
database's bytes (``sqlite3.Connection.serialize``, then compressed as every blob is). A
SQLite warehouse attaches the image and copies the rows with one ``INSERT … SELECT``: no
Python object per row on either side of the copy (the controller's ``charge_loader``).
Building the image costs a processor about 0.4 µs a row more than writing JSON, CPU moved
from the one controller to the processors, which scale out. Other readers (PostgreSQL's
``COPY``, tests) iterate :class:`ResultTable` for the same tuples a JSON result gives, but
more slowly than msgspec decodes them, so deployments on PostgreSQL write JSON results
(``BILLING_RESULT_FORMAT``).

The tables are ``STRICT``, so each value's type was checked as the processor wrote it, and
:func:`read_image` refuses an image whose schema is not exactly :data:`SCHEMA` (no other
table, trigger or view; the blob's sha256 was checked against its message before).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

from shared.domain.charges import CHARGE_FIELDS, INVOICE_SUMS
from shared.sqlite_values import insert_values

#: The version a result's ``header`` row carries.
TABLE_VERSION = 3
#: A row: when the transaction occurred (UTC text), then its charge, as the warehouse stores it.
ROW_COLUMNS = ("occurred_at_utc", *CHARGE_FIELDS)
SUBTOTAL_FIGURES = INVOICE_SUMS
_TEXT = ("occurred_at_utc", "transaction_id", "customer_id", "sku", "region")


def _columns(names: Sequence[str], text: Sequence[str]) -> str:
    return ", ".join(f"{name} {'TEXT' if name in text else 'INTEGER'} NOT NULL" for name in names)


#: The image's tables, as ``sqlite_schema`` spells them. ``rows``' row ids are 1…n in the
#: rows' order; ``id_checksum`` is text because it may exceed SQLite's signed 64 bits.
SCHEMA = {
    "header": (
        "CREATE TABLE header (v INTEGER NOT NULL, batch_id TEXT NOT NULL, "
        "chunk INTEGER NOT NULL, currency TEXT NOT NULL, pricebook_version TEXT NOT NULL, "
        "id_checksum TEXT NOT NULL) STRICT"
    ),
    "rows": f"CREATE TABLE rows ({_columns(ROW_COLUMNS, _TEXT)}) STRICT",
    "subtotals": (
        "CREATE TABLE subtotals (customer_id TEXT PRIMARY KEY NOT NULL, "
        f"{_columns(SUBTOTAL_FIGURES, ())}) WITHOUT ROWID, STRICT"
    ),
}
#: How an image begins (the SQLite file header), to tell it from a JSON document.
MAGIC = b"SQLite format 3\x00"
_SELECT_ROWS = f"SELECT {', '.join(ROW_COLUMNS)} FROM rows ORDER BY rowid"
_INSERT_SUBTOTAL = f"INSERT INTO subtotals VALUES ({', '.join('?' * (1 + len(SUBTOTAL_FIGURES)))})"
_SELECT_SUBTOTALS = "SELECT * FROM subtotals"


class ResultTableError(ValueError):
    """An image that is not a version 3 chunk result."""


@dataclass(frozen=True)
class Header:
    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    id_checksum: int


def write_image(
    header: Header, rows: Sequence[Sequence[Any]], subtotals: Mapping[str, Sequence[int]]
) -> bytes:
    """The database image of one chunk's result (uncompressed)."""
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = OFF")  # built in memory, thrown away on failure
        db.execute("BEGIN")
        for sql in SCHEMA.values():
            db.execute(sql)
        db.execute(
            "INSERT INTO header VALUES (?, ?, ?, ?, ?, ?)",
            (
                TABLE_VERSION,
                header.batch_id,
                header.chunk,
                header.currency,
                header.pricebook_version,
                str(header.id_checksum),
            ),
        )
        # statements of many rows, not executemany's GIL hand-over per row (sqlite_rows)
        insert_values(db, "INSERT INTO rows", len(ROW_COLUMNS), rows)
        db.executemany(_INSERT_SUBTOTAL, ((c, *figures) for c, figures in subtotals.items()))
        db.execute("COMMIT")
        return db.serialize()


@dataclass(frozen=True, eq=False)
class ResultTable(Sequence[tuple[Any, ...]]):
    """A result's rows, held as the database image they are in.

    A sequence of row tuples (in :data:`ROW_COLUMNS` order) for whoever iterates it; a SQLite
    warehouse copies them from :attr:`image` without making them (the controller's
    ``charge_loader.copy_charges``).
    """

    image: bytes = field(repr=False)
    length: int

    @cached_property
    def _rows(self) -> list[tuple[Any, ...]]:
        with closing(open_image(self.image)) as db:
            return db.execute(_SELECT_ROWS).fetchall()

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Any, ...]]: ...
    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | Sequence[tuple[Any, ...]]:
        return self._rows[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return self._rows == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a sequence, compared by its rows


@dataclass(frozen=True, eq=False)
class ImageSubtotals(Mapping[str, tuple[int, ...]]):
    """A result's per-customer subtotals, held as the image they are in.

    A mapping for whoever reads it (PostgreSQL's upsert, tests); a SQLite warehouse sums
    them into ``invoices`` straight from the attached image (the controller's reducer)
    without making a Python object per customer, whose count grows with the chunk's
    distinct customers, not with its rows.
    """

    image: bytes = field(repr=False)

    @cached_property
    def _figures(self) -> dict[str, tuple[int, ...]]:
        with closing(open_image(self.image)) as db:
            return {c: tuple(figures) for c, *figures in db.execute(_SELECT_SUBTOTALS)}

    def __getitem__(self, customer_id: str) -> tuple[int, ...]:
        return self._figures[customer_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._figures)

    def __len__(self) -> int:
        return len(self._figures)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._figures == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a mapping, compared by its items


def open_image(image: bytes) -> sqlite3.Connection:
    """An in-memory connection over a copy of ``image`` (close it)."""
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(image)
    except sqlite3.Error as exc:
        db.close()
        raise ResultTableError(f"not a chunk result database: {exc}") from None
    return db


def read_image(image: bytes) -> tuple[Header, ResultTable, ImageSubtotals]:
    """The header, rows and subtotals of an image, once its schema proved to be
    :data:`SCHEMA` and its row ids 1…n. Raises :class:`ResultTableError`."""
    with closing(open_image(image)) as db:
        try:
            schema = dict(
                db.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table'").fetchall()
            )
            others = db.execute("SELECT count(*) FROM sqlite_schema WHERE type <> 'table'")
            if schema != SCHEMA or others.fetchone() != (0,):
                raise ResultTableError(
                    f"unexpected chunk result tables: {sorted(schema)} "
                    f"(expected {sorted(SCHEMA)}, and no index, view or trigger)"
                )
            headers = db.execute("SELECT * FROM header").fetchall()
            if len(headers) != 1 or headers[0][0] != TABLE_VERSION:
                raise ResultTableError(f"malformed chunk result header: {headers!r}")
            _, batch_id, chunk, currency, pricebook_version, checksum_text = headers[0]
            count, first, last = db.execute(
                "SELECT count(*), min(rowid), max(rowid) FROM rows"
            ).fetchone()
            if count and (first, last) != (1, count):
                raise ResultTableError(f"chunk result rows numbered {first}…{last}, not 1…{count}")
        except sqlite3.Error as exc:
            raise ResultTableError(f"not a chunk result database: {exc}") from None
    if not checksum_text.isdigit():
        raise ResultTableError(f"malformed chunk result id checksum {checksum_text!r}")
    header = Header(batch_id, chunk, currency, pricebook_version, int(checksum_text))
    return header, ResultTable(image, count), ImageSubtotals(image)
