"""At most ``max_concurrent_intakes`` batches read at once, each on a thread of its own pool.

Reading a batch holds a worker thread for as long as the client takes to send it. On
anyio's default pool (40 threads, shared with every ``def`` route) a few dozen slow clients
would leave the status routes nothing to run on. So intakes run on a pool of their own, one
thread per slot, and a request beyond the slots is answered ``503`` with ``Retry-After`` at
once rather than queued behind the others: a client that retries later does better than one
whose connection waits in a line of unknown length.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

#: The ``Retry-After`` of a 503 for a full house: a small batch takes about this long.
RETRY_AFTER_SECONDS = 5


class IntakesBusyError(Exception):
    """Every intake slot is taken (503)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"{limit} batches are being read already (BILLING_MAX_CONCURRENT_INTAKES); "
            f"retry in {RETRY_AFTER_SECONDS} s"
        )


class IntakeSlots:
    """The slots, claimed on the event loop; ``threads`` is the pool intakes run on."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("at least one intake slot is needed")
        self.limit = limit
        self.threads = anyio.CapacityLimiter(limit)
        self._taken = 0

    @property
    def taken(self) -> int:
        return self._taken

    @contextmanager
    def claim(self) -> Iterator[None]:
        """Hold a slot for the block, or raise :class:`IntakesBusyError` at once.

        Called on the event loop only (one thread): a plain counter is enough."""
        if self._taken >= self.limit:
            raise IntakesBusyError(self.limit)
        self._taken += 1
        try:
            yield
        finally:
            self._taken -= 1
