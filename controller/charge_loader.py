"""Bulk loading of charges: PostgreSQL ``COPY``, SQLite multi-row ``INSERT`` of plain tuples.

The reducer inserts every charge the pipeline rates, so this is the warehouse's hottest
write. An ORM-level insert of a list of dicts costs tens of microseconds a row in SQLAlchemy
(parameter construction and a type processor per value) before the driver sees it; the
drivers' own bulk paths cost a fraction of that:

* **PostgreSQL**: ``COPY charges (…) FROM STDIN`` through psycopg 3, one ``write_row`` per
  charge (formatted in C by psycopg's binary package), streamed in the open transaction;
* **SQLite**: ``INSERT … VALUES`` of two thousand tuples a statement on the driver's
  connection (:mod:`shared.warehouse.sqlite_rows`): sqlite3 binds every value in C and
  steps once per statement; ``executemany``, stepping once per row, waited for the GIL
  before every row whenever another thread of the controller ran Python.

Rows are tuples in :data:`COLUMNS` order, ready for the database: integers and strings,
and ``occurred_at`` already the UTC text the warehouse stores
(:mod:`shared.domain.utc_text`: ``2024-06-01 12:00:00.250000``), which the processor
wrote. SQLite stores it as it is: exactly the text SQLAlchemy's ``DateTime`` stores there,
so the ORM reads these rows back like any other. PostgreSQL reads it into ``timestamptz``
in the transaction's time zone, which the loader sets to UTC (``SET LOCAL``: the rest of
the connection's life keeps its own).

Both paths run on the caller's SQLAlchemy connection, inside its transaction, so the
reducer's applied mark, its charges and its invoice sums still commit or roll back as one.
A driver error is re-raised as SQLAlchemy's (an ``IntegrityError`` stays an
``IntegrityError``), so callers handle one family of exceptions whatever the path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

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
