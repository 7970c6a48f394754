"""Bulk loading of charges: PostgreSQL ``COPY``, SQLite ``executemany`` of plain tuples.

The reducer inserts every charge the pipeline rates, so this is the warehouse's hottest
write. An ORM-level insert of a list of dicts costs tens of microseconds a row in SQLAlchemy
(parameter construction and a type processor per value) before the driver sees it; the
drivers' own bulk paths cost a fraction of that:

* **PostgreSQL**: ``COPY charges (…) FROM STDIN`` through psycopg 3, one ``write_row`` per
  charge (formatted in C by psycopg's binary package), streamed in the open transaction;
* **SQLite**: one ``executemany`` of tuples on the connection's own cursor: sqlite3 binds
  and steps every row in C.

Rows are tuples in :data:`COLUMNS` order, ready for the database: integers and strings,
and ``occurred_at`` still the RFC 3339 text the batch file spelled (``2024-06-01T12:00:00Z``,
``…T14:00:00.250+02:00``, at most 6 fractional digits). The database parses it: PostgreSQL
reads it into ``timestamptz``; on SQLite the ``INSERT`` converts it to UTC with
``strftime`` and appends the fraction, giving exactly the text SQLAlchemy's ``DateTime``
stores there (``2024-06-01 12:00:00.000000``), so the ORM reads these rows back like any
other.

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

#: The order of a charge row's values: where the charge belongs, then the rated charge.
COLUMNS = ("order_id", "batch_id", "chunk", "currency", "occurred_at", *CHARGE_FIELDS)
ChargeRow = Sequence[Any]
"""One charge: values in :data:`COLUMNS` order, ``occurred_at`` as RFC 3339 text."""

_TABLE = "charges"
_COLUMN_LIST = ", ".join(COLUMNS)
_COPY = f"COPY {_TABLE} ({_COLUMN_LIST}) FROM STDIN"


def _sqlite_utc_text(parameter: str) -> str:
    """SQL turning the RFC 3339 text ``parameter`` into SQLAlchemy's SQLite ``DateTime`` text.

    ``strftime`` gets the local date and time in whole seconds and the offset as a
    ``minutes`` modifier: SQLite's own offset syntax stops at ±14:00, where the batch file
    allows up to ±23:59, and its fraction is read to milliseconds and rounded (``59.9999``
    would become the next minute). The fraction is therefore copied from the text instead
    (character 20 is its ``.``; the offset is the last 1 or 6 characters) and padded to
    microseconds: an offset, being whole minutes, never changes it.
    """
    p = parameter
    zulu = f"substr({p}, -1) = 'Z'"
    to_utc = (
        f"CASE WHEN {zulu} THEN '+0 minutes' ELSE "
        f"(CASE substr({p}, -6, 1) WHEN '+' THEN '-' ELSE '+' END) "
        f"|| (substr({p}, -5, 2) * 60 + substr({p}, -2, 2)) || ' minutes' END"
    )
    fraction = (
        f"CASE WHEN substr({p}, 20, 1) = '.' "
        f"THEN substr({p}, 21, length({p}) - 20 - CASE WHEN {zulu} THEN 1 ELSE 6 END) "
        "ELSE '' END"
    )
    seconds = f"strftime('%Y-%m-%d %H:%M:%S', substr({p}, 1, 19), {to_utc})"
    return f"{seconds} || '.' || substr({fraction} || '000000', 1, 6)"


def _sqlite_insert() -> str:
    values = [f"?{index}" for index in range(1, len(COLUMNS) + 1)]
    at = COLUMNS.index("occurred_at")
    values[at] = _sqlite_utc_text(values[at])
    return f"INSERT INTO {_TABLE} ({_COLUMN_LIST}) VALUES ({', '.join(values)})"


_SQLITE_INSERT = _sqlite_insert()


def load_charges(connection: Connection, rows: Iterable[ChargeRow]) -> None:
    """Insert ``rows`` into ``charges`` in the connection's open transaction."""
    dialect = connection.dialect
    dbapi_connection: Any = connection.connection.driver_connection
    if dialect.name == "postgresql":
        statement = _COPY
    elif dialect.name == "sqlite":
        statement = _SQLITE_INSERT
    else:
        raise NotImplementedError(
            f"the warehouse supports SQLite and PostgreSQL, not {dialect.name}"
        )
    try:
        if dialect.name == "postgresql":
            with dbapi_connection.cursor() as cursor, cursor.copy(statement) as copy:
                write_row = copy.write_row
                for row in rows:
                    write_row(row)
        else:
            cursor = dbapi_connection.cursor()
            try:
                cursor.executemany(statement, rows)
            finally:
                cursor.close()
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            statement, None, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
