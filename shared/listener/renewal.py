"""Visibility renewal: a message stays hidden for as long as its handler works on it.

A received message is hidden for the visibility timeout. A handler that runs longer would
see it redelivered to another consumer, so once a message has been held for
``fraction * timeout`` the :class:`LeaseRenewer` extends it (``update_visibility``). Each
update returns a **new pop receipt** and invalidates the old one; the :class:`Lease` keeps
the newest so the next renewal and the final delete use it. The handler gets the lease, not
a bare message, so it never holds a receipt that has gone stale.

One renewer thread serves all leases of a listener: renewals are rare (only long handlers
need one) and each is a single request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from azure.core.exceptions import ResourceNotFoundError

from shared.listener.source import QueueSource
from shared.storage.ports import QueueMessage

log = logging.getLogger(__name__)


class Lease:
    """A received message while this process holds it."""

    def __init__(self, message: QueueMessage, source: QueueSource, held_since: float) -> None:
        self.source = source
        #: the message as received; its content, id and dequeue count never change
        self.received = message
        self._lock = threading.Lock()
        self._message = message
        self._held_since = held_since
        self._released = False
        self._lost = False

    @property
    def message(self) -> QueueMessage:
        """The message with its newest pop receipt."""
        with self._lock:
            return self._message

    @property
    def content(self) -> str:
        return self.received.content

    @property
    def message_id(self) -> str:
        return self.received.id

    @property
    def dequeue_count(self) -> int:
        return self.received.dequeue_count

    @property
    def queue_name(self) -> str:
        return self.source.name

    @property
    def lost(self) -> bool:
        """A renewal found the receipt stale: another consumer may have the message now."""
        with self._lock:
            return self._lost

    def held_since(self) -> float:
        with self._lock:
            return self._held_since

    def renew(self, visibility_timeout: int, now: float) -> bool:
        """Extend the visibility; False if the lease was released or is lost.

        Holding the lease's lock across the request serialises it with :meth:`release`, so
        a delete never races a renewal for the receipt.
        """
        with self._lock:
            if self._released or self._lost:
                return False
            try:
                self._message = self.source.queue.update_visibility(
                    self._message, visibility_timeout
                )
            except ResourceNotFoundError:
                self._lost = True
                return False
            self._held_since = now
            return True

    def release(self) -> QueueMessage:
        """Stop renewing; returns the message with the receipt to delete (or abandon) it by."""
        with self._lock:
            self._released = True
            return self._message


class LeaseRenewer:
    """Renews every held lease once it has been held ``fraction * visibility_timeout``."""

    def __init__(
        self,
        visibility_timeout: int,
        fraction: float = 0.5,
        *,
        on_renewed: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        name: str = "lease-renewer",
    ) -> None:
        self._timeout = visibility_timeout
        self._interval = visibility_timeout * fraction
        self._on_renewed = on_renewed
        self._clock = clock
        self._leases: set[Lease] = set()
        self._changed = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing: held messages will reappear once their visibility runs out."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def hold(self, lease: Lease) -> None:
        with self._changed:
            self._leases.add(lease)
            self._changed.notify_all()

    def drop(self, lease: Lease) -> None:
        with self._changed:
            self._leases.discard(lease)

    def _run(self) -> None:
        while True:
            with self._changed:
                if self._stopping:
                    return
                due = self._due_leases()
                if not due:
                    self._changed.wait(self._seconds_to_next())
                    continue
            for lease in due:  # outside the lock: each renewal is a storage request
                self._renew(lease)

    def _due_leases(self) -> list[Lease]:
        now = self._clock()
        return [lease for lease in self._leases if lease.held_since() + self._interval <= now]

    def _seconds_to_next(self) -> float | None:
        if not self._leases:
            return None
        earliest = min(lease.held_since() for lease in self._leases)
        return max(earliest + self._interval - self._clock(), 0.0)

    def _renew(self, lease: Lease) -> None:
        try:
            renewed = lease.renew(self._timeout, self._clock())
        except Exception:
            # A transient failure: try again soon, well before the visibility runs out.
            log.warning(
                "renewing message %s on %s failed",
                lease.message_id,
                lease.queue_name,
                exc_info=True,
            )
            with self._changed:
                self._changed.wait(min(self._interval / 4, 1.0))
            return
        if renewed:
            self._on_renewed()
            return
        self.drop(lease)
        if lease.lost:
            log.warning(
                "lost the lease on message %s of %s: it may be handled again elsewhere",
                lease.message_id,
                lease.queue_name,
            )
