"""Many rows into SQLite in few statements, on a plain ``sqlite3`` connection.

``executemany`` steps once per row and takes the GIL back before binding the next one, so
beside a busy Python thread each row waits for it (:mod:`shared.warehouse.sqlite_rows`
tells how much). Binding :data:`MAX_VALUES_PER_STATEMENT` values to each ``INSERT … VALUES
(…), (…), …`` hands the GIL over once a statement instead. The warehouse uses it through
:func:`shared.warehouse.sqlite_rows.insert_rows`; a processor, for its in-memory result
database (:mod:`shared.contracts.result_table`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import chain, islice
from typing import Any

#: Values bound to one statement: SQLite's default limit since 3.32 (builds may allow more).
MAX_VALUES_PER_STATEMENT = 32_766


def insert_values(
    dbapi_connection: Any,
    into: str,
    width: int,
    rows: Iterable[Sequence[Any]],
    *,
    then: str = "",
) -> None:
    """Run ``{into} VALUES (…), (…), … {then}`` for ``rows`` of ``width`` values each, as
    many rows to a statement as the limit allows, on ``dbapi_connection`` (``sqlite3``,
    whose errors it raises). ``into``: ``INSERT INTO table (columns)``; ``then``: what
    follows the values (an ``ON CONFLICT`` clause)."""
    per_statement = max(1, MAX_VALUES_PER_STATEMENT // width)
    remaining = iter(rows)
    while batch := list(islice(remaining, per_statement)):
        sql = _statement(into, width, len(batch), then)
        dbapi_connection.execute(sql, list(chain.from_iterable(batch)))


@lru_cache(maxsize=16)  # the full statement, and the short last ones of recent chunks
def _statement(into: str, width: int, rows: int, then: str) -> str:
    group = f"({', '.join('?' * width)})"
    return f"{into} VALUES {', '.join([group] * rows)} {then}".rstrip()
