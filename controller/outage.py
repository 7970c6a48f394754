"""While the warehouse is unreachable, the controller stops taking messages, and waits.

A result message whose handler fails comes back after its visibility timeout with one more
dequeue; after ``max_dequeue_count`` of them it goes to the poison queue and its chunk is
failed. That is right for a message that cannot be applied, and wrong when the warehouse
is down: every message would burn its dequeues on the outage, and an outage of a few
minutes would fail every batch in flight although nothing is wrong with them.

So :class:`WarehouseOutageGuard` tells the two apart. A handler that fails because the
database cannot be reached (SQLAlchemy's ``OperationalError`` / ``InterfaceError``, or a
connection found dead) pauses the listener (no more receives, so no more dequeues), hands
the message back to reappear soon, and a probe asks the warehouse every few seconds; when
it answers, the listener resumes. Each message in flight at the start of an outage spends
one dequeue on it, whatever its length.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from shared.listener import Lease
from shared.listener.retry import RetryLater

log = logging.getLogger(__name__)

#: How often the probe asks an unreachable warehouse whether it is back.
PROBE_SECONDS = 2.0


class Pausable(Protocol):
    def pause(self) -> None: ...

    def resume(self) -> None: ...


def is_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the warehouse could not be reached (not that the work is bad)."""
    if isinstance(error, OperationalError | InterfaceError):
        return True
    return isinstance(error, DBAPIError) and error.connection_invalidated


class WarehouseOutageGuard:
    """Wraps the controller's handler; :meth:`attach` the listener it pauses and resumes."""

    def __init__(
        self,
        handler: Callable[[Lease], None],
        engine: Engine,
        *,
        probe_seconds: float = PROBE_SECONDS,
    ) -> None:
        self._handler = handler
        self._engine = engine
        self._probe_seconds = probe_seconds
        self._listener: Pausable | None = None
        self._lock = threading.Lock()
        self._probe: threading.Thread | None = None
        self._stopping = threading.Event()
        self.outages = 0

    def attach(self, listener: Pausable) -> None:
        self._listener = listener

    @property
    def in_outage(self) -> bool:
        with self._lock:
            return self._probe is not None

    def handle(self, lease: Lease) -> None:
        try:
            self._handler(lease)
        except Exception as error:
            if not is_unreachable(error):
                raise
            self._begin_outage(error)
            raise RetryLater(
                "the warehouse is unreachable", delay=round(self._probe_seconds)
            ) from error

    def stop(self) -> None:
        """End the probe (at worker stop); the listener is being stopped anyway."""
        self._stopping.set()
        with self._lock:
            probe = self._probe
        if probe is not None:
            probe.join(timeout=self._probe_seconds + 5)

    def _begin_outage(self, error: BaseException) -> None:
        with self._lock:
            if self._probe is not None or self._stopping.is_set():
                return
            self.outages += 1
            self._probe = threading.Thread(
                target=self._wait_until_back, name="warehouse-probe", daemon=True
            )
            log.warning(
                "the warehouse is unreachable (%s); the controller pauses and keeps its "
                "messages until it answers again",
                type(error).__name__,
            )
            if self._listener is not None:
                self._listener.pause()
            self._probe.start()

    def _wait_until_back(self) -> None:
        while not self._stopping.wait(self._probe_seconds):
            try:
                with self._engine.connect() as connection:
                    connection.execute(text("SELECT 1"))
            except Exception as error:
                if not is_unreachable(error):
                    log.exception("probing the warehouse failed unexpectedly")
                continue
            break
        with self._lock:
            self._probe = None
        if not self._stopping.is_set():
            log.warning("the warehouse answers again; the controller resumes")
            if self._listener is not None:
                self._listener.resume()
