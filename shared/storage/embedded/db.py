"""One SQLite database file shared by every thread and process that opens the same folder.

Why SQLite in WAL mode: readers never block the writer and the writer never blocks readers,
and a write transaction is a few tens of microseconds, so several processes can share one
queue without a server. The rules that make it safe:

* one connection per thread (and per process: a connection must not cross a ``fork``);
* a busy timeout, so a writer waits for the lock instead of failing;
* ``BEGIN IMMEDIATE`` for every read-modify-write (:meth:`Database.transaction`): it takes
  the write lock *before* reading, so two processes cannot both read the same state and
  then both write. A single ``UPDATE``/``DELETE``/``INSERT`` statement run on its own is
  already atomic (SQLite takes the write lock when the statement starts), so hot paths use
  :meth:`Database.connection` directly and save two round trips.

``synchronous=NORMAL`` in WAL mode survives a crash of any process but not a power cut:
right for a local backend whose point is a first run without a server.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: How long a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_SECONDS = 30.0


class Database:
    """A SQLite file with a schema, handing out one connection per thread."""

    def __init__(self, path: Path, schema: str) -> None:
        self.path = path
        self._schema = schema
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._schema_ready = False
        path.parent.mkdir(parents=True, exist_ok=True)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit: each statement is its own transaction)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        conn = self._connect()
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database's write lock from its first read."""
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this object opened, in whichever thread."""
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
            self._local = threading.local()

    def _connect(self) -> sqlite3.Connection:
        # check_same_thread=False only so that close() may run in another thread; each
        # connection is otherwise used by the thread that opened it.
        conn = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_SECONDS,
            isolation_level=None,
            check_same_thread=False,
        )
        _switch_to_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            if not self._schema_ready:
                conn.executescript(self._schema)
                self._schema_ready = True
            self._connections.append(conn)
        return conn


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode (a setting stored in the file, so once is enough).

    The switch needs a moment alone with the file, and SQLite reports "database is locked"
    at once, without its busy handler, when processes open a fresh folder together: retry.
    """
    deadline, mode = time.monotonic() + BUSY_TIMEOUT_SECONDS, "unknown"
    while True:
        try:
            (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if str(mode).lower() == "wal":
                return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise sqlite3.OperationalError(f"could not switch to WAL mode: still {mode}")
        time.sleep(0.01)


def now() -> float:
    """Seconds since the epoch: the clock every process on the machine shares."""
    return time.time()
