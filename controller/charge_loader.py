"""Bulk loading of charges: PostgreSQL ``COPY``, SQLite multi-row ``INSERT`` of plain tuples.

The reducer inserts every charge the pipeline rates, so this is the warehouse's hottest
write. An ORM-level insert of a list of dicts costs tens of microseconds a row in SQLAlchemy
(parameter construction and a type processor per value) before the driver sees it; the
drivers' own bulk paths cost a fraction of that:

* **PostgreSQL**: ``COPY charges (…) FROM STDIN`` through psycopg 3, one ``write_row`` per
  charge (formatted in C by psycopg's binary package), streamed in the open transaction;
* **SQLite**: a version 3 result (:mod:`shared.contracts.result_table`) is an SQLite
  database image: :func:`attached_result` attaches it to the warehouse connection and
  :func:`copy_charges` copies its rows with one ``INSERT … SELECT`` (per run of
  consecutive order ids), all in SQLite: no Python object per row (about a third of the
  CPU of decoding a JSON result and inserting its tuples: ``bench.end_to_end``). Rows given
  as tuples go in as ``INSERT … VALUES`` of two thousand tuples a statement on the driver's
  connection (:mod:`shared.warehouse.sqlite_rows`): sqlite3 binds every value in C and
  steps once per statement, where ``executemany`` steps, and waits for the GIL, once per
  row whenever another thread of the controller runs Python.

Rows are tuples in :data:`COLUMNS` order, ready for the database: integers and strings,
and ``occurred_at`` already the UTC text the warehouse stores
(:mod:`shared.domain.utc_text`: ``2024-06-01 12:00:00.250000``), which the processor
wrote. SQLite stores it as it is: exactly the text SQLAlchemy's ``DateTime`` stores there,
so the ORM reads these rows back like any other. PostgreSQL reads it into ``timestamptz``
in the transaction's time zone, which the loader sets to UTC (``SET LOCAL``: the rest of
the connection's life keeps its own).

Both paths run on the caller's SQLAlchemy connection, inside its transaction, so the
reducer's applied mark and its charges still commit or roll back as one.
A driver error is re-raised as SQLAlchemy's (an ``IntegrityError`` stays an
``IntegrityError``), so callers handle one family of exceptions whatever the path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from shared.contracts.result_table import ROW_COLUMNS, ResultTable
from shared.domain.charges import CHARGE_FIELDS
from shared.warehouse.sqlite_rows import insert_rows

#: The order of a charge row's values: where the charge belongs, then the rated charge.
COLUMNS = ("order_id", "batch_id", "chunk", "currency", "occurred_at", *CHARGE_FIELDS)
WarehouseRow = Sequence[Any]
"""One charge: values in :data:`COLUMNS` order, ``occurred_at`` as the warehouse's UTC text."""

_TABLE = "charges"
_COLUMN_LIST = ", ".join(COLUMNS)
_COPY = f"COPY {_TABLE} ({_COLUMN_LIST}) FROM STDIN"


_SQLITE_INTO = f"INSERT INTO {_TABLE} ({_COLUMN_LIST})"
_UTC = "SET LOCAL TIME ZONE 'UTC'"


def load_charges(connection: Connection, rows: Iterable[WarehouseRow]) -> None:
    """Insert ``rows`` into ``charges`` in the connection's open transaction."""
    dialect = connection.dialect
    if dialect.name == "sqlite":
        insert_rows(connection, _SQLITE_INTO, len(COLUMNS), rows)  # raises SQLAlchemy's errors
        return
    if dialect.name != "postgresql":
        raise NotImplementedError(
            f"the warehouse supports SQLite and PostgreSQL, not {dialect.name}"
        )
    dbapi_connection: Any = connection.connection.driver_connection
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(_UTC)
            with cursor.copy(_COPY) as copy:
                write_row = copy.write_row
                for row in rows:
                    write_row(row)
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            _COPY, None, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc


#: The name a result image is attached under, on the warehouse connection that copies it.
ATTACHED = "chunk_result"
_COPY_SELECT = (
    f"{_SQLITE_INTO} SELECT rowid + ?, ?, ?, ?, {', '.join(ROW_COLUMNS)} "
    f"FROM {ATTACHED}.rows WHERE rowid BETWEEN ? AND ?"
)


@contextmanager
def attached_result(connection: Connection, table: ResultTable | None) -> Iterator[bool]:
    """Attach ``table``'s image to ``connection`` (SQLite, outside a transaction: SQLite
    attaches and detaches only there) for :func:`copy_charges`; yields whether it did
    (not for ``None`` or another database)."""
    if table is None or connection.dialect.name != "sqlite":
        yield False
        return
    dbapi_connection: Any = connection.connection.driver_connection
    dbapi_connection.execute(f"ATTACH DATABASE ':memory:' AS {ATTACHED}")
    try:
        dbapi_connection.deserialize(table.image, name=ATTACHED)
        yield True
    finally:
        dbapi_connection.execute(f"DETACH DATABASE {ATTACHED}")


def copy_charges(
    connection: Connection, order_ids: Sequence[int], batch_id: str, chunk: int, currency: str
) -> None:
    """Copy the attached result's rows into ``charges`` (see :func:`attached_result`), the
    row numbered ``n`` (1…) with ``order_ids[n - 1]``, in the connection's open transaction."""
    dbapi_connection: Any = connection.connection.driver_connection
    dialect = connection.dialect
    for first_row, first_id, count in _runs(order_ids):
        try:
            dbapi_connection.execute(
                _COPY_SELECT,
                (first_id - first_row, batch_id, chunk, currency, first_row, first_row + count - 1),
            )
        except dialect.loaded_dbapi.Error as exc:
            raise DBAPIError.instance(
                _COPY_SELECT, None, exc, dialect.loaded_dbapi.Error, dialect=dialect
            ) from exc


def _runs(ids: Sequence[int]) -> list[tuple[int, int, int]]:
    """``ids`` (ascending, as the allocator hands them out) as runs of consecutive ids:
    (the first row's number counting from 1, its id, how many)."""
    if not ids:
        return []
    if ids[-1] - ids[0] == len(ids) - 1:  # the usual case: one range
        return [(1, ids[0], len(ids))]
    runs, start = [], 0
    for index in range(1, len(ids)):
        if ids[index] != ids[index - 1] + 1:
            runs.append((start + 1, ids[start], index - start))
            start = index
    runs.append((start + 1, ids[start], len(ids) - start))
    return runs
