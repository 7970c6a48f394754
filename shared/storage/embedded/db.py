"""One SQLite database file shared by every thread and process that opens the same folder.

Why SQLite in WAL mode: readers never block the writer and the writer never blocks readers,
and a write transaction is a few tens of microseconds, so several processes can share one
queue without a server. The rules that make it safe:

* one connection per thread (and per process: a connection must not cross a ``fork``),
  closed when its thread ends: roles start short-lived thread pools (one per published
  batch, for instance), and a connection outliving its thread would hold its file
  descriptors for the life of the process;
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
import weakref
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
        # Re-entrant: a finalizer may run wherever the interpreter frees a slot.
        self._lock = threading.RLock()
        self._open: set[sqlite3.Connection] = set()
        self._schema_ready = False
        path.parent.mkdir(parents=True, exist_ok=True)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit: each statement is its own transaction)."""
        held: _ThreadConnection | None = getattr(self._local, "held", None)
        if held is not None and held.pid == os.getpid():
            return held.conn
        conn = self._connect()
        held = _ThreadConnection(conn)
        # The thread-local slot is the only reference to ``held``: when the thread ends,
        # Python drops it and the finalizer closes the connection.
        weakref.finalize(held, _close_and_forget, conn, held.pid, self._open, self._lock)
        self._local.held = held
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
            connections = list(self._open)
            self._open.clear()
            # Dropping the old slots runs this thread's finalizer, which takes the lock.
            retired, self._local = self._local, threading.local()
        for conn in connections:
            conn.close()
        del retired

    def open_connections(self) -> int:
        """How many connections are open now (one per live thread that used the file)."""
        with self._lock:
            return len(self._open)

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
            self._open.add(conn)
        return conn


class _ThreadConnection:
    """One thread's connection, owned by that thread's ``threading.local`` slot."""

    __slots__ = ("__weakref__", "conn", "pid")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pid = os.getpid()


def _close_and_forget(
    conn: sqlite3.Connection, pid: int, open_set: set[sqlite3.Connection], lock: threading.RLock
) -> None:
    """Close a connection whose thread has ended (or whose database was closed).

    A child process inherits its parent's connections with ``fork`` and must not close them
    (SQLite could take the parent's WAL for its own last user): it only forgets them.
    """
    with lock:
        open_set.discard(conn)
    if os.getpid() == pid:
        conn.close()


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
