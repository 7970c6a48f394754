"""Which handler threads are busy with a message, and since when.

A handler blocked on a socket that never answers keeps its message's lease renewed and its
dequeue thread waiting for it, for ever: the listener looks alive (its threads run, its
counters stand still as they do when the queues are empty) and takes nothing more from that
thread. Progress counters cannot tell this from a quiet queue, and renewals cannot tell it
from a long chunk; the time since the handling of the current message started can. So each
handling is marked busy from the moment it starts until it is settled, and
:meth:`BusyHandlers.longest` names the one that has been at it longest
(:meth:`~shared.listener.engine.QueueListener.wedged` compares it with
``ListenerConfig.wedged_handler_seconds``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class BusyHandler:
    """One handler thread at work on one message."""

    thread: str
    queue_name: str
    message_id: str
    #: how long it has been handling this message, by the listener's clock
    seconds: float


@dataclass(frozen=True)
class _Busy:
    thread: str
    queue_name: str
    message_id: str
    since: float


class BusyHandlers:
    """The busy-since of every handler thread now handling a message; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._busy: dict[int, _Busy] = {}  # by thread ident: a thread handles one at a time

    @contextmanager
    def busy(self, queue_name: str, message_id: str) -> Iterator[None]:
        """Marks the calling thread busy with this message for the duration of the block."""
        thread = threading.current_thread()
        key = threading.get_ident()
        entry = _Busy(thread.name, queue_name, message_id, self._clock())
        with self._lock:
            self._busy[key] = entry
        try:
            yield
        finally:
            with self._lock:
                self._busy.pop(key, None)

    def longest(self) -> BusyHandler | None:
        """The handler busy for the longest now, or None while none is busy."""
        with self._lock:
            oldest = min(self._busy.values(), key=lambda busy: busy.since, default=None)
        if oldest is None:
            return None
        seconds = self._clock() - oldest.since
        return BusyHandler(oldest.thread, oldest.queue_name, oldest.message_id, seconds)
