"""At most ``max_concurrent_intakes`` batches read at once, each on a thread of its own pool.

Reading a batch holds a worker thread for as long as the client takes to send it. On
anyio's default pool (40 threads, shared with every ``def`` route) a few dozen slow clients
would leave the status routes nothing to run on. So intakes run on a pool of their own, one
thread per slot, and a request beyond the slots is answered ``503`` with ``Retry-After`` at
once rather than queued behind the others: a client that retries later does better than one
whose connection waits in a line of unknown length.

The slots are shared fairly: one sender (an API key; a client address where the API runs
without keys) holds at most ``per_sender`` of them, all but one by default. A sender whose
uploads are slow, or who holds slots on purpose, then waits on itself, while the other
senders still find a free slot; the minimum pace (:mod:`initiator.body_pace`) frees a slot that a
client does not keep busy.
"""

from __future__ import annotations

from collections import Counter
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


class SenderBusyError(IntakesBusyError):
    """This sender holds its share of the slots already (503); others may still send."""

    def __init__(self, per_sender: int) -> None:
        Exception.__init__(
            self,
            f"this sender has {per_sender} batch(es) being read already "
            f"(BILLING_MAX_INTAKES_PER_SENDER); retry in {RETRY_AFTER_SECONDS} s",
        )


def share_per_sender(limit: int, configured: int) -> int:
    """The slots one sender may hold: ``configured``, or all but one of ``limit`` (at least
    one): a single sender still uses nearly every slot, and never the last one."""
    return min(configured, limit) if configured > 0 else max(1, limit - 1)


class IntakeSlots:
    """The slots, claimed on the event loop; ``threads`` is the pool intakes run on."""

    def __init__(self, limit: int, per_sender: int = 0) -> None:
        if limit < 1:
            raise ValueError("at least one intake slot is needed")
        self.limit = limit
        self.per_sender = share_per_sender(limit, per_sender)
        self.threads = anyio.CapacityLimiter(limit)
        self._taken = 0
        self._by_sender: Counter[str] = Counter()

    @property
    def taken(self) -> int:
        return self._taken

    @contextmanager
    def claim(self, sender: str = "") -> Iterator[None]:
        """Hold a slot for the block, or raise :class:`IntakesBusyError` at once (or
        :class:`SenderBusyError` when ``sender`` holds its share already).

        Called on the event loop only (one thread): plain counters are enough."""
        if self._by_sender[sender] >= self.per_sender:
            raise SenderBusyError(self.per_sender)
        if self._taken >= self.limit:
            raise IntakesBusyError(self.limit)
        self._taken += 1
        self._by_sender[sender] += 1
        try:
            yield
        finally:
            self._taken -= 1
            self._by_sender[sender] -= 1
            if not self._by_sender[sender]:
                del self._by_sender[sender]
