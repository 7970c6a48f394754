"""The embedded backend's SQLite connections live as long as the threads that use them.

Roles start short-lived threads all the time (a pool per published batch, a thread per
request); a connection kept after its thread ended would hold its file descriptors (the
database and its WAL) until the process exits.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

from shared.storage.embedded.db import Database

POOL_THREADS = 4
SCHEMA = "CREATE TABLE IF NOT EXISTS things (id INTEGER PRIMARY KEY, name TEXT)"


def _use(database: Database, name: str) -> None:
    database.connection().execute("INSERT INTO things (name) VALUES (?)", (name,))


def _open_files_under(folder: Path) -> int:
    return sum(1 for f in psutil.Process().open_files() if Path(f.path).parent == folder)


def _pool_round(database: Database, round_: int) -> None:
    with ThreadPoolExecutor(POOL_THREADS) as pool:
        list(pool.map(lambda n: _use(database, f"{round_}-{n}"), range(8)))


def test_a_thread_that_ends_closes_its_connection(tmp_path: Path) -> None:
    database = Database(tmp_path / "db.sqlite", SCHEMA)
    _use(database, "main thread")  # the caller's own connection stays
    files_of_one_connection = _open_files_under(tmp_path)

    for round_ in range(50):
        _pool_round(database, round_)

    assert database.open_connections() == 1
    # SQLite keeps the descriptor of a closed connection for reuse while another connection
    # of the process holds the file (closing it would drop that one's locks): at most one per
    # thread that used the file at once, never one more per thread that ever did.
    assert _open_files_under(tmp_path) <= files_of_one_connection + POOL_THREADS
    (count,) = database.connection().execute("SELECT count(*) FROM things").fetchone()
    assert count == 1 + 50 * 8
    database.close()
    assert database.open_connections() == 0
    assert _open_files_under(tmp_path) == 0


def test_a_live_thread_keeps_its_connection_and_close_ends_it(tmp_path: Path) -> None:
    database = Database(tmp_path / "db.sqlite", SCHEMA)
    used, release = threading.Event(), threading.Event()

    def worker() -> None:
        _use(database, "worker")
        first = database.connection()
        used.set()
        release.wait(10)
        assert database.connection() is first

    thread = threading.Thread(target=worker)
    thread.start()
    assert used.wait(10)
    assert database.open_connections() == 1
    release.set()
    thread.join(10)
    assert database.open_connections() == 0
    database.close()
    assert os.getpid() > 0
