"""The lifecycle every role shares (start, stop, snapshot), and running one until a signal."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol

from pydantic import BaseModel

log = logging.getLogger(__name__)


class Role(Protocol):
    """A running part of a deployment: the initiator's server, a processor, a controller."""

    def start(self) -> None:
        """Start; raise if it cannot, having stopped whatever it had started."""
        ...

    def stop(self, timeout: float | None = None) -> bool:
        """Stop within ``timeout`` seconds; ``True`` if all in-flight work finished."""
        ...

    def snapshot(self) -> BaseModel:
        """What it is doing now."""
        ...


class Shutdown:
    """A stop flag set by SIGINT/SIGTERM (or by code), that waiting threads can block on."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def install_signal_handlers(self) -> None:
        def handler(signum: int, _frame: FrameType | None) -> None:
            log.info("received %s, shutting down", signal.Signals(signum).name)
            self._event.set()

        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)

    def request(self) -> None:
        self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


def run_until_signalled(start: Callable[[], None], stop: Callable[[], None]) -> None:
    """Start a role, block until a signal arrives, then stop it (stop always runs)."""
    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    start()
    try:
        shutdown.wait()
    finally:
        stop()


def time_left(deadline: float) -> float:
    """Seconds until ``deadline`` (a ``time.monotonic()`` value), never negative."""
    return max(deadline - time.monotonic(), 0.0)
