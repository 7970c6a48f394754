"""The bulk charge loader (COPY on PostgreSQL, executemany on SQLite) against the ORM insert.

Every test runs on SQLite and on PostgreSQL. The loader must store what an ORM insert of
the same charges stores — the timestamps above all, which it hands to the database as the
UTC text the processor wrote — inside the caller's transaction, and fail the way SQLAlchemy
fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, func, insert, select, text
from sqlalchemy.exc import IntegrityError

from controller.charge_loader import COLUMNS, load_charges
from shared.domain.utc_text import utc_text_of
from shared.warehouse import Charge, make_engine, upgrade
from tests.warehouse.conftest import add_batch

#: Spellings the batch file accepts: Z or an offset, no fraction or 1 to 6 digits; offsets
#: that move the date back or forward (and over a year's end) when converted to UTC.
TIMESTAMPS = (
    "2024-06-01T12:00:00Z",
    "2024-06-01T12:00:00.5Z",
    "2024-06-01T12:00:00.25Z",
    "2024-06-01T12:00:00.123456Z",
    "2024-06-01T00:30:00+02:00",
    "2024-06-01T23:45:10.000001-05:30",
    "2024-12-31T23:59:59.999999-01:00",
    "2025-01-01T00:00:00.100+14:00",
    "2024-02-29T12:00:00+00:00",
)


def charge_rows(batch_id: str, first_order_id: int = 1) -> list[tuple[Any, ...]]:
    """One charge per timestamp spelling, values in ``COLUMNS`` order."""
    rows = []
    for n, at in enumerate(TIMESTAMPS):
        quantity, unit_price = n + 1, 100 + n
        gross = quantity * unit_price
        values = {
            "order_id": first_order_id + n,
            "batch_id": batch_id,
            "chunk": 0,
            "currency": "USD",
            "occurred_at": utc_text_of(at),  # as the processor writes it
            "transaction_id": f"T-{n}",
            "customer_id": f"C-{n % 2}",
            "sku": "SKU-1",
            "region": "EU",
            "quantity": quantity,
            "unit_price": unit_price,
            "gross": gross,
            "discount": n,
            "net": gross - n,
            "tax": 2 * n,
            "total": gross + n,
        }
        rows.append(tuple(values[column] for column in COLUMNS))
    return rows


def orm_insert(engine: Engine, rows: list[tuple[Any, ...]]) -> None:
    """The same rows the way the reducer inserted them before: ORM, aware datetimes."""
    values = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    for value, spelling in zip(values, TIMESTAMPS, strict=True):
        value["occurred_at"] = datetime.fromisoformat(spelling)
    with engine.begin() as connection:
        connection.execute(insert(Charge), values)


def stored(engine: Engine, batch_id: str) -> list[tuple[Any, ...]]:
    """The batch's charges as the ORM reads them, without the batch id, by order id."""
    columns = [Charge.__table__.c[name] for name in COLUMNS if name != "batch_id"]
    query = select(*columns).where(Charge.batch_id == batch_id).order_by(Charge.order_id)
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(query)]


def test_loaded_rows_read_back_as_the_orm_inserted_ones(engine: Engine) -> None:
    add_batch(engine, "loaded")
    add_batch(engine, "orm")
    with engine.begin() as connection:
        load_charges(connection, charge_rows("loaded"))
    orm_insert(engine, charge_rows("orm", first_order_id=101))

    loaded, inserted = stored(engine, "loaded"), stored(engine, "orm")
    assert len(loaded) == len(TIMESTAMPS)
    assert [row[1:] for row in loaded] == [row[1:] for row in inserted]  # all but order_id
    at = COLUMNS.index("occurred_at") - 1  # no batch_id in stored()
    assert [row[at] for row in loaded] == [
        datetime.fromisoformat(spelling).astimezone(UTC) for spelling in TIMESTAMPS
    ]


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'warehouse.sqlite3'}"
    upgrade(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def test_sqlite_stores_the_same_text_as_sqlalchemy(sqlite_engine: Engine) -> None:
    engine = sqlite_engine
    add_batch(engine, "loaded")
    add_batch(engine, "orm")
    with engine.begin() as connection:
        load_charges(connection, charge_rows("loaded"))
    orm_insert(engine, charge_rows("orm", first_order_id=101))
    raw = text("SELECT occurred_at FROM charges WHERE batch_id = :b ORDER BY order_id")
    with engine.connect() as connection:
        loaded = connection.execute(raw, {"b": "loaded"}).scalars().all()
        inserted = connection.execute(raw, {"b": "orm"}).scalars().all()
    assert loaded == inserted
    assert loaded[4] == "2024-05-31 22:30:00.000000"  # 00:30 at +02:00


def test_a_rolled_back_transaction_leaves_no_charge(engine: Engine) -> None:
    add_batch(engine, "b")

    def load_then_fail() -> None:
        with engine.begin() as connection:
            load_charges(connection, charge_rows("b"))
            raise RuntimeError("after the load")

    with pytest.raises(RuntimeError, match="after the load"):
        load_then_fail()
    assert stored(engine, "b") == []


def test_a_duplicate_transaction_is_an_integrity_error_and_loads_nothing(engine: Engine) -> None:
    add_batch(engine, "b")
    with engine.begin() as connection:
        load_charges(connection, charge_rows("b")[:1])
    again = charge_rows("b", first_order_id=50)  # same transaction ids, new order ids
    with pytest.raises(IntegrityError), engine.begin() as connection:
        load_charges(connection, again)
    assert len(stored(engine, "b")) == 1
    # The engine is still usable: the failed transaction was rolled back cleanly.
    with engine.begin() as connection:
        load_charges(connection, charge_rows("b", first_order_id=200)[1:])
    assert len(stored(engine, "b")) == len(TIMESTAMPS)


def test_many_rows_in_one_call(engine: Engine) -> None:
    add_batch(engine, "big")
    count = 5_000
    base = charge_rows("big")[0]
    rows = [(n + 1, *base[1:5], f"T-{n}", *base[6:]) for n in range(count)]
    with engine.begin() as connection:
        load_charges(connection, iter(rows))  # any iterable, e.g. a generator
    with engine.connect() as connection:
        loaded, ids = connection.execute(
            select(func.count(), func.sum(Charge.order_id)).where(Charge.batch_id == "big")
        ).one()
    assert (loaded, ids) == (count, count * (count + 1) // 2)


@pytest.mark.postgres
def test_postgresql_reads_the_text_in_utc_whatever_the_session_time_zone(
    postgres_url: str,
) -> None:
    url = postgres_url
    upgrade(url)
    engine = make_engine(url)
    # A server or role whose time zone is not UTC: the loader's SET LOCAL must win, for
    # its own transaction only.
    event.listen(engine, "connect", _kolkata)
    try:
        add_batch(engine, "zoned")
        with engine.begin() as connection:
            load_charges(connection, charge_rows("zoned"))
        with engine.connect() as connection:
            zone = connection.exec_driver_sql("SHOW TIME ZONE").scalar()
        at = COLUMNS.index("occurred_at") - 1
        assert [row[at] for row in stored(engine, "zoned")] == [
            datetime.fromisoformat(spelling).astimezone(UTC) for spelling in TIMESTAMPS
        ]
        assert zone == "Asia/Kolkata"
    finally:
        engine.dispose()


def _kolkata(dbapi_connection: Any, _record: Any) -> None:
    with dbapi_connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Asia/Kolkata'")
    dbapi_connection.commit()
