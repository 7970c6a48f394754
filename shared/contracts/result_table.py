"""A chunk result as an SQLite database image (result version 4): rows a warehouse loads in C.

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

The header also carries the chunk's invoice sums (:data:`~shared.domain.charges.INVOICE_SUMS`
over all its rows, one figure each: the controller keeps them on the chunk's applied mark and
checks the batch's invoices against them at close). A version 3 image, an older processor's,
has a ``subtotals`` table of one row per customer instead; :func:`read_image` sums it into
the same figures, in SQLite.

The tables are ``STRICT``, so each value's type was checked as the processor wrote it, and
:func:`read_image` refuses an image whose schema is not exactly :data:`SCHEMA` or
:data:`SCHEMA_V3` (no other table, trigger or view; the blob's sha256 was checked against
its message before).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

from shared.domain.charges import CHARGE_FIELDS, INVOICE_SUMS
from shared.sqlite_values import insert_values

#: The version a result's ``header`` row carries.
TABLE_VERSION = 4
#: An older processor's images: per-customer subtotals rather than the chunk's sums.
TABLE_VERSION_3 = 3
#: A row: when the transaction occurred (UTC text), then its charge, as the warehouse stores it.
ROW_COLUMNS = ("occurred_at_utc", *CHARGE_FIELDS)
_TEXT = ("occurred_at_utc", "transaction_id", "customer_id", "sku", "region")


def _columns(names: Sequence[str], text: Sequence[str]) -> str:
    return ", ".join(f"{name} {'TEXT' if name in text else 'INTEGER'} NOT NULL" for name in names)


#: The image's tables, as ``sqlite_schema`` spells them. ``rows``' row ids are 1…n in the
#: rows' order; ``id_checksum`` is text because it may exceed SQLite's signed 64 bits; the
#: header's last columns are the chunk's invoice sums.
SCHEMA = {
    "header": (
        "CREATE TABLE header (v INTEGER NOT NULL, batch_id TEXT NOT NULL, "
        "chunk INTEGER NOT NULL, currency TEXT NOT NULL, pricebook_version TEXT NOT NULL, "
        f"id_checksum TEXT NOT NULL, {_columns(INVOICE_SUMS, ())}) STRICT"
    ),
    "rows": f"CREATE TABLE rows ({_columns(ROW_COLUMNS, _TEXT)}) STRICT",
}
#: A version 3 image's tables: a header without sums, and a subtotal per customer.
SCHEMA_V3 = {
    "header": (
        "CREATE TABLE header (v INTEGER NOT NULL, batch_id TEXT NOT NULL, "
        "chunk INTEGER NOT NULL, currency TEXT NOT NULL, pricebook_version TEXT NOT NULL, "
        "id_checksum TEXT NOT NULL) STRICT"
    ),
    "rows": SCHEMA["rows"],
    "subtotals": (
        "CREATE TABLE subtotals (customer_id TEXT PRIMARY KEY NOT NULL, "
        f"{_columns(INVOICE_SUMS, ())}) WITHOUT ROWID, STRICT"
    ),
}
#: How an image begins (the SQLite file header), to tell it from a JSON document.
MAGIC = b"SQLite format 3\x00"
_SELECT_ROWS = f"SELECT {', '.join(ROW_COLUMNS)} FROM rows ORDER BY rowid"
_HEADER_FIELDS = 6  # v … id_checksum
_INSERT_HEADER = (
    f"INSERT INTO header VALUES ({', '.join('?' * (_HEADER_FIELDS + len(INVOICE_SUMS)))})"
)
#: A version 3 image's subtotals summed into the chunk's invoice sums.
_SUM_SUBTOTALS = (
    f"SELECT {', '.join(f'coalesce(sum({name}), 0)' for name in INVOICE_SUMS)} FROM subtotals"
)


class ResultTableError(ValueError):
    """An image that is not a version 3 chunk result."""


@dataclass(frozen=True)
class Header:
    batch_id: str
    chunk: int
    currency: str
    pricebook_version: str
    id_checksum: int
    #: the chunk's :data:`~shared.domain.charges.INVOICE_SUMS` over all its rows
    invoice_sums: tuple[int, ...]


def write_image(header: Header, rows: Sequence[Sequence[Any]]) -> bytes:
    """The database image of one chunk's result (uncompressed)."""
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode = OFF")  # built in memory, thrown away on failure
        db.execute("BEGIN")
        for sql in SCHEMA.values():
            db.execute(sql)
        if len(header.invoice_sums) != len(INVOICE_SUMS):
            raise ValueError(f"a chunk's invoice sums are {len(INVOICE_SUMS)} figures")
        db.execute(
            _INSERT_HEADER,
            (
                TABLE_VERSION,
                header.batch_id,
                header.chunk,
                header.currency,
                header.pricebook_version,
                str(header.id_checksum),
                *header.invoice_sums,
            ),
        )
        # statements of many rows, not executemany's GIL hand-over per row (sqlite_rows)
        insert_values(db, "INSERT INTO rows", len(ROW_COLUMNS), rows)
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


def open_image(image: bytes) -> sqlite3.Connection:
    """An in-memory connection over a copy of ``image`` (close it)."""
    db = sqlite3.connect(":memory:")
    try:
        db.deserialize(image)
    except sqlite3.Error as exc:
        db.close()
        raise ResultTableError(f"not a chunk result database: {exc}") from None
    return db


def read_image(image: bytes) -> tuple[Header, ResultTable]:
    """The header (with the chunk's invoice sums) and rows of an image, once its schema
    proved to be :data:`SCHEMA` (or a version 3 image's :data:`SCHEMA_V3`) and its row ids
    1…n. Raises :class:`ResultTableError`."""
    with closing(open_image(image)) as db:
        try:
            schema = dict(
                db.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table'").fetchall()
            )
            others = db.execute("SELECT count(*) FROM sqlite_schema WHERE type <> 'table'")
            version = {TABLE_VERSION: SCHEMA, TABLE_VERSION_3: SCHEMA_V3}
            expected = next((v for v, tables in version.items() if schema == tables), None)
            if expected is None or others.fetchone() != (0,):
                raise ResultTableError(
                    f"unexpected chunk result tables: {sorted(schema)} "
                    f"(expected {sorted(SCHEMA)}, and no index, view or trigger)"
                )
            headers = db.execute("SELECT * FROM header").fetchall()
            if len(headers) != 1 or headers[0][0] != expected:
                raise ResultTableError(f"malformed chunk result header: {headers!r}")
            _, batch_id, chunk, currency, pricebook_version, checksum_text = headers[0][
                :_HEADER_FIELDS
            ]
            if expected == TABLE_VERSION:
                sums = tuple(headers[0][_HEADER_FIELDS:])
            else:
                sums = tuple(db.execute(_SUM_SUBTOTALS).fetchone())
            count, first, last = db.execute(
                "SELECT count(*), min(rowid), max(rowid) FROM rows"
            ).fetchone()
            if count and (first, last) != (1, count):
                raise ResultTableError(f"chunk result rows numbered {first}…{last}, not 1…{count}")
        except sqlite3.Error as exc:
            raise ResultTableError(f"not a chunk result database: {exc}") from None
    if not checksum_text.isdigit():
        raise ResultTableError(f"malformed chunk result id checksum {checksum_text!r}")
    header = Header(batch_id, chunk, currency, pricebook_version, int(checksum_text), sums)
    return header, ResultTable(image, count)
