"""A value read at most once per time-to-live, however many requests ask for it.

The dashboard polls every two seconds from each open tab and Prometheus scrapes on its own
schedule; without a cache each of them would cost storage queries (billed transactions). A
lock makes concurrent askers wait for the one refresh instead of all querying at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TimedCache(Generic[T]):
    """``get()`` returns the last value read by ``read`` if it is younger than ``ttl`` seconds."""

    def __init__(
        self,
        read: Callable[[], T],
        *,
        ttl: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entry: tuple[float, T] | None = None  # (read at, value)

    def get(self) -> T:
        with self._lock:
            now = self._clock()
            if self._entry is None or now - self._entry[0] >= self._ttl:
                # A failed read raises and keeps the previous entry for the next try.
                self._entry = (now, self._read())
            return self._entry[1]
