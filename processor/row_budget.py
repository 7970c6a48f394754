"""How many transactions one processor process rates at once, across all its handlers.

A dequeue thread runs up to four handlers (``handler_parallelism``) so that one chunk's
storage round trips overlap another's rating; each handler holds its whole chunk while it
rates it (the decoded rows, the rated rows, the result document: ~2 KB a transaction).
Counted in chunks, memory would grow with the chunk size. Counted in transactions, a
handler waits before it fetches its chunk until the others leave room, so memory stays
bounded whatever the chunk size, and small chunks still overlap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RowBudget:
    """At most ``limit`` transactions held at once; a chunk larger than that runs alone."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a row budget needs room for at least one transaction")
        self.limit = limit
        self._held = 0
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, transactions: int) -> Iterator[None]:
        """Wait until ``transactions`` fit beside those held, and hold them meanwhile."""
        share = min(transactions, self.limit)
        with self._changed:
            self._changed.wait_for(lambda: self._held + share <= self.limit)
            self._held += share
        try:
            yield
        finally:
            with self._changed:
                self._held -= share
                self._changed.notify_all()
