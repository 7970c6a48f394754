"""Many rows into SQLite in few statements, rather than ``executemany``'s one step per row.

Python's sqlite3 releases the GIL around each ``sqlite3_step`` and takes it back before it
binds the next row. ``executemany`` steps once per row, so whenever another thread of the
process holds the GIL (a controller's listener receiving, a handler fetching the next
result, SDK threads), every row of the insert waits for it: up to the interpreter's switch
interval (5 ms) a row: with one busy Python thread beside it, ``executemany`` takes about
fifteen times the wall time a row of statements of a thousand rows; with no other thread
both cost the same.

So the controller binds :data:`~shared.sqlite_values.MAX_VALUES_PER_STATEMENT` values to
each ``INSERT … VALUES (…), (…), …`` (:func:`~shared.sqlite_values.insert_values`): the
step that inserts them runs once, the GIL changes hands once per statement, and sqlite3
still binds every value in C.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from shared.sqlite_values import insert_values


def insert_rows(
    connection: Connection,
    into: str,
    width: int,
    rows: Iterable[Sequence[Any]],
    *,
    then: str = "",
) -> None:
    """Run ``{into} VALUES (…), (…), … {then}`` for ``rows`` of ``width`` values each, as
    many rows to a statement as the limit allows, in ``connection``'s open transaction
    (SQLite).

    ``into``: ``INSERT INTO table (columns)``; ``then``: what follows the values (an
    ``ON CONFLICT`` clause). A driver error is raised as SQLAlchemy's, as the rest of the
    warehouse code expects (an ``IntegrityError`` stays one)."""
    dialect = connection.dialect
    try:
        insert_values(connection.connection.driver_connection, into, width, rows, then=then)
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            f"{into} VALUES … {then}", None, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
