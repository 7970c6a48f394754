"""The warehouse engine: one factory, with the SQLite settings a multi-writer warehouse needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from shared.warehouse.entra import default_credential, sign_in_with_tokens, wants_entra_token

#: How long a SQLite writer waits for another one before "database is locked" (ms). The
#: reducer's transactions last milliseconds; a long wait only happens under heavy load.
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: The page size of a new SQLite warehouse (see _configure_sqlite_connection); SQLite's largest.
SQLITE_PAGE_SIZE = 65_536


def make_engine(url: str, *, read_only: bool = False, **engine_options: Any) -> Engine:
    """A SQLAlchemy engine for ``url`` (``Settings.resolved_warehouse_url``).

    PostgreSQL (``postgresql+psycopg://…``) needs nothing special, except that an Azure
    server named without a password gets Microsoft Entra tokens as passwords
    (:mod:`shared.warehouse.entra`). For a SQLite file the
    folder is created if missing (a first run has no ``.billing`` yet) and every connection
    gets the pragmas in :func:`_configure_sqlite_connection`; every transaction of a writer
    starts with ``BEGIN IMMEDIATE`` (see :func:`_begin_immediate`). A ``read_only`` engine
    (the initiator's invoice pages) keeps SQLite's deferred ``BEGIN``: in WAL mode its
    reads then never wait for a writer's lock.
    """
    parsed = make_url(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, pool_pre_ping=not is_sqlite, **engine_options)
    if wants_entra_token(parsed):
        sign_in_with_tokens(engine, default_credential())
    if is_sqlite:
        event.listen(engine, "connect", _configure_sqlite_connection)
        if not read_only:
            event.listen(engine, "begin", _begin_immediate)
    return engine


def _configure_sqlite_connection(dbapi_connection: Any, _record: Any) -> None:
    # SQLAlchemy, not the sqlite3 module, decides when a transaction begins (below):
    # sqlite3's own implicit BEGIN would be deferred and would skip DDL.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # First, so that even switching the journal mode waits for another process.
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        # Before anything is written (a no-op on an existing database, which keeps its own):
        # 64 KiB pages make the B-trees of charges and of its unique key shallower and each
        # page split rarer, so a chunk's copy into charges is quicker (bench.end_to_end).
        cursor.execute(f"PRAGMA page_size = {SQLITE_PAGE_SIZE}")
        # WAL: readers never block the writer nor the writer the readers, across processes.
        # Asked first, and a database already in WAL mode left alone: asking to switch it
        # anyway can fail with "database is locked" at once, busy_timeout or not, while
        # another process holds a write transaction (controllers starting together while
        # one of them migrates: tests/warehouse/test_migrations.py).
        if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            cursor.execute("PRAGMA journal_mode = WAL")
        # FULL, not WAL's usual NORMAL: a result message is deleted right after the commit,
        # so the commit must survive a power cut too, or the chunk would be lost.
        cursor.execute("PRAGMA synchronous = FULL")
        # SQLite ignores foreign keys unless asked, on every connection.
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


#: An execution option for a connection of a writer engine that only reads: on SQLite its
#: transactions begin deferred, so that several such connections read at once (WAL mode)
#: and none waits for, or holds, the write lock (``connection.execution_options(**READS_ONLY)``).
_READS_ONLY_OPTION = "billing_reads_only"
READS_ONLY = {_READS_ONLY_OPTION: True}


def _begin_immediate(connection: Any) -> None:
    # A deferred transaction that reads (the applied mark, alembic_version) and then writes
    # fails at once with SQLITE_BUSY if another process wrote meanwhile: busy_timeout does
    # not help there. Taking the write lock at BEGIN makes writers queue up instead, and in
    # WAL mode readers of other connections still proceed.
    if connection.get_execution_options().get(_READS_ONLY_OPTION):
        connection.exec_driver_sql("BEGIN")
        return
    connection.exec_driver_sql("BEGIN IMMEDIATE")
