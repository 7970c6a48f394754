"""A new SQLite warehouse gets 64 KiB pages; an existing one keeps the pages it has."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import func, select

from shared.warehouse import Batch, make_engine, upgrade
from shared.warehouse.engine import SQLITE_PAGE_SIZE


def page_size(path: Path) -> int:
    with sqlite3.connect(path) as db:
        (size,) = db.execute("PRAGMA page_size").fetchone()
    return int(size)


def test_a_new_warehouse_has_large_pages(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.db"
    upgrade(f"sqlite:///{path}")
    assert page_size(path) == SQLITE_PAGE_SIZE == 65_536


def test_an_existing_warehouse_keeps_its_pages_and_works(tmp_path: Path) -> None:
    path = tmp_path / "warehouse.db"
    with sqlite3.connect(path) as db:  # as an earlier release made it: 4 KiB pages, WAL
        db.execute("PRAGMA page_size = 4096")
        db.execute("PRAGMA journal_mode = WAL")
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.scalar(select(func.count()).select_from(Batch)) == 0
    finally:
        engine.dispose()
    assert page_size(path) == 4096
