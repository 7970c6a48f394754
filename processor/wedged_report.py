"""A worker process's wedged handler, told to the supervisor that answers the probes.

The processor's listeners run in its worker processes, and its health endpoint in the
supervisor: so each worker writes why its listener is wedged (or nothing) into a few bytes
of shared memory every time it looks at its stop event, and the supervisor's readiness
probe reads them. The worker computes the reason itself, by its own clock, so the two
processes never compare clocks.

    report = WedgedReport(multiprocessing.get_context("spawn"))   # supervisor, per process
    report.write(listener.wedged())                                # worker, every tick
    report.read()                                                  # supervisor's probe
"""

from __future__ import annotations

import ctypes
from multiprocessing.context import SpawnContext

#: Room for one reason (thread, seconds, message id, queue name); a longer one is cut.
REASON_BYTES = 512


class WedgedReport:
    """One worker process's current wedged-handler reason; shared with it at spawn."""

    def __init__(self, context: SpawnContext) -> None:
        self._text = context.Array(ctypes.c_char, REASON_BYTES)  # zeroed: no reason

    def write(self, reason: str | None) -> None:
        """The worker's latest reason (None: no handler is wedged)."""
        cut = (reason or "").encode("utf-8", "replace")[: REASON_BYTES - 1]
        encoded = cut.decode("utf-8", "ignore").encode()  # a character cut in two is dropped
        with self._text.get_lock():
            if self._text.value != encoded:  # the same reason tick after tick: no write
                self._text.value = encoded

    def read(self) -> str | None:
        """The worker's last reason, or None."""
        with self._text.get_lock():
            text = self._text.value
        return text.decode() or None
