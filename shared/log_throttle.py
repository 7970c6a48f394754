"""Warnings and errors repeated in a loop are logged once a minute, with a count.

A failure that repeats every millisecond (``accept()`` out of descriptors, a dependency that
refuses every request) would otherwise fill a disk with the same traceback: here the first
record of a kind in a window is written, the rest are counted, and the next one written
after the window says how many were left out. A kind is the logger, the level and the
place in the code with its message template, so one failing request path is one kind
whatever its arguments. Records below WARNING pass untouched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: One record of a kind per window.
WINDOW_SECONDS = 60.0
#: Kinds remembered at most; old ones are forgotten first (a bound, not a tuning knob).
MAX_KINDS = 1_000

Kind = tuple[str, int, str, int, str]


@dataclass
class _Seen:
    window_start: float
    left_out: int = 0


class RepeatThrottle(logging.Filter):
    """A handler filter: see the module's docstring."""

    def __init__(
        self, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[Kind, _Seen] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        kind = (record.name, record.levelno, record.pathname, record.lineno, str(record.msg))
        now = self._clock()
        with self._lock:
            seen = self._seen.get(kind)
            if seen is not None and now - seen.window_start < self._window:
                seen.left_out += 1
                return False
            left_out = seen.left_out if seen is not None else 0
            self._seen.pop(kind, None)
            self._seen[kind] = _Seen(now)
            if len(self._seen) > MAX_KINDS:
                del self._seen[next(iter(self._seen))]
        if left_out:
            record.msg = (
                f"{record.getMessage()} [{left_out:,} more like this in the last "
                f"{self._window:.0f} s were not logged]"
            )
            record.args = None
        return True
