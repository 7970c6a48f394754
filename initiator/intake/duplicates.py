"""Exact detection of repeated transaction ids, in bounded memory.

A batch may hold ~15 million ids (a 1 GB file) while the initiator must stay under ~300 MB,
so keeping every id in a Python dict (~130 bytes per entry with its line number) is not an
option for large batches. The strategy, in two phases:

1. **In memory** up to ``memory_limit`` ids: a dict from id to its first line. Most batches
   (thousands to hundreds of thousands of lines) never leave this phase, and a duplicate is
   reported the moment it is added.
2. **Spilled to SQLite** beyond that: the dict is written to a temporary database file (a
   ``WITHOUT ROWID`` table keyed by the id text, so the id is stored once, in the B-tree)
   and dropped. New ids are buffered and inserted ``flush_size`` at a time with
   ``INSERT OR IGNORE`` in one ``executemany``; if the number of rows inserted equals the
   number buffered there was no duplicate (the common case, no extra query). Otherwise each
   buffered id is looked up: a stored line other than its own is its first occurrence.
   Detection is exact (no hashing, no false positives); it is merely *late* by up to one
   buffer, which ``unchecked_from`` tells the caller.

Memory stays at about ``memory_limit`` dict entries plus SQLite's page cache
(``cache_kib``); the file lives in a fresh directory under ``temp_dir`` (tempfile's default
when None) and is removed by :meth:`close`, or at the latest when the detector is collected.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import NamedTuple, Self

DEFAULT_MEMORY_LIMIT = 200_000
"""~25 MB of dict; batches up to this size never touch the disk."""
DEFAULT_FLUSH_SIZE = 20_000
DEFAULT_CACHE_KIB = 32 * 1024

_NONE: tuple[Duplicate, ...] = ()


class Duplicate(NamedTuple):
    transaction_id: str
    line: int
    first_line: int


class DuplicateDetector:
    """Tells, for each id added, whether an earlier line already had it (and which line)."""

    def __init__(
        self,
        *,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        flush_size: int = DEFAULT_FLUSH_SIZE,
        temp_dir: str | Path | None = None,
        cache_kib: int = DEFAULT_CACHE_KIB,
    ) -> None:
        if memory_limit < 0 or flush_size < 1:
            raise ValueError("memory_limit must be >= 0 and flush_size >= 1")
        self._memory_limit = memory_limit
        self._flush_size = flush_size
        self._temp_dir = temp_dir
        self._cache_kib = cache_kib
        self._first_lines: dict[str, int] | None = {}
        self._buffer: list[tuple[str, int]] = []
        self._db: sqlite3.Connection | None = None
        self._cleanup: weakref.finalize[[sqlite3.Connection, str], DuplicateDetector] | None = None

    @property
    def spilled(self) -> bool:
        """Whether the ids have moved to the temporary SQLite file."""
        return self._db is not None

    @property
    def unchecked_from(self) -> int | None:
        """Line of the oldest id added but not yet checked (None when all are checked)."""
        return self._buffer[0][1] if self._buffer else None

    def add(self, transaction_id: str, line: int) -> Sequence[Duplicate]:
        """Record ``transaction_id`` seen on ``line`` (lines must be distinct).

        Returns the duplicates this call uncovered: in memory, this id if it is one; once
        spilled, possibly ids of earlier lines, when a buffer is flushed.
        """
        first_lines = self._first_lines
        if first_lines is not None:
            first_line = first_lines.setdefault(transaction_id, line)
            if first_line != line:
                return (Duplicate(transaction_id, line, first_line),)
            if len(first_lines) > self._memory_limit:
                self._spill(first_lines)
            return _NONE
        self._buffer.append((transaction_id, line))
        if len(self._buffer) >= self._flush_size:
            return self.flush()
        return _NONE

    def flush(self) -> list[Duplicate]:
        """Check every buffered id now; returns the duplicates among them, in line order."""
        if not self._buffer or self._db is None:
            return []
        buffered, self._buffer = self._buffer, []
        # Sorting by id gives the B-tree nearly sequential inserts; equal ids keep line order,
        # so the first occurrence is the one inserted.
        buffered.sort()
        before = self._db.total_changes
        self._db.executemany("INSERT OR IGNORE INTO ids (id, line) VALUES (?, ?)", buffered)
        if self._db.total_changes - before == len(buffered):
            return []
        duplicates = []
        for transaction_id, line in buffered:
            row = self._db.execute("SELECT line FROM ids WHERE id = ?", (transaction_id,))
            (first_line,) = row.fetchone()
            if first_line != line:
                duplicates.append(Duplicate(transaction_id, line, first_line))
        duplicates.sort(key=lambda duplicate: duplicate.line)
        return duplicates

    def close(self) -> None:
        """Drop everything, including the temporary database file."""
        self._first_lines = {}
        self._buffer = []
        if self._cleanup is not None:
            self._cleanup()
        self._db = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _spill(self, first_lines: dict[str, int]) -> None:
        directory = tempfile.mkdtemp(prefix="batch-ids-", dir=self._temp_dir)
        db = sqlite3.connect(Path(directory) / "ids.sqlite3", isolation_level=None)
        self._cleanup = weakref.finalize(self, _remove, db, directory)
        # A scratch file: no journal, no fsync, nobody else opens it.
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute("PRAGMA locking_mode = EXCLUSIVE")
        db.execute(f"PRAGMA cache_size = -{int(self._cache_kib)}")
        db.execute("CREATE TABLE ids (id TEXT PRIMARY KEY, line INTEGER NOT NULL) WITHOUT ROWID")
        db.execute("BEGIN")
        db.executemany("INSERT INTO ids (id, line) VALUES (?, ?)", sorted(first_lines.items()))
        self._db = db
        self._first_lines = None


def _remove(db: sqlite3.Connection, directory: str) -> None:
    db.close()
    shutil.rmtree(directory, ignore_errors=True)
