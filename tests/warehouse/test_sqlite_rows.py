"""Many rows into SQLite in few statements (shared.warehouse.sqlite_rows)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import IntegrityError

from shared.sqlite_values import MAX_VALUES_PER_STATEMENT
from shared.warehouse.sqlite_rows import insert_rows

WIDTH = 3
INTO = "INSERT INTO t (k, name, n)"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{tmp_path / 'rows.sqlite3'}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (k INTEGER PRIMARY KEY, name TEXT, n INTEGER)"))
    return engine


def rows(count: int, start: int = 0) -> list[tuple[int, str, int]]:
    return [(k, f"row {k}", k * 7) for k in range(start, start + count)]


def test_every_row_lands_in_order_in_a_few_statements(engine: Engine) -> None:
    per_statement = MAX_VALUES_PER_STATEMENT // WIDTH
    count = 2 * per_statement + 5  # two full statements and a short one
    statements: list[str] = []
    with engine.begin() as connection:
        connection.connection.driver_connection.set_trace_callback(statements.append)  # type: ignore[union-attr]
        insert_rows(connection, INTO, WIDTH, iter(rows(count)))
        connection.connection.driver_connection.set_trace_callback(None)  # type: ignore[union-attr]
        stored = connection.execute(text("SELECT k, name, n FROM t ORDER BY k")).all()
    assert [tuple(row) for row in stored] == rows(count)
    inserts = [sql for sql in statements if sql.startswith("INSERT")]
    assert len(inserts) == math.ceil(count / per_statement) == 3


def test_what_follows_the_values_applies_to_every_row(engine: Engine) -> None:
    with engine.begin() as connection:
        insert_rows(connection, INTO, WIDTH, rows(10))
        insert_rows(
            connection,
            INTO,
            WIDTH,
            rows(10, start=5),
            then="ON CONFLICT (k) DO UPDATE SET n = t.n + excluded.n",
        )
        stored: dict[int, int] = dict(connection.execute(text("SELECT k, n FROM t")).all())
    assert stored == {k: k * 7 * (2 if 5 <= k < 10 else 1) for k in range(15)}


def test_a_driver_error_is_sqlalchemys_and_the_transaction_rolls_back(engine: Engine) -> None:
    with pytest.raises(IntegrityError), engine.begin() as connection:
        insert_rows(connection, INTO, WIDTH, [*rows(3), (1, "again", 0)])
    with engine.connect() as connection:
        assert connection.scalar(text("SELECT count(*) FROM t")) == 0


def test_no_rows_runs_nothing(engine: Engine) -> None:
    with engine.begin() as connection:
        insert_rows(connection, INTO, WIDTH, [])
        assert connection.scalar(text("SELECT count(*) FROM t")) == 0
