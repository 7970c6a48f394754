"""How long ``POST /batches`` waits for its body: an idle timeout and a minimum average rate.

An idle timeout alone does not stop a client that sends one byte every few seconds: it
holds an intake slot (and its worker thread) for as long as it likes. So the body must also
arrive at ``min_bytes_per_second`` on average, with one idle timeout of grace: after
``t`` seconds a client must have sent at least ``(t - idle_timeout) * min_bytes_per_second``
bytes. A fast client that pauses keeps the credit it earned, up to one idle timeout per wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class BodyPace:
    """The deadline of each read of one request body."""

    def __init__(
        self,
        *,
        idle_timeout: float,
        min_bytes_per_second: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_timeout <= 0 or min_bytes_per_second <= 0:
            raise ValueError("idle_timeout and min_bytes_per_second must be positive")
        self.idle_timeout = idle_timeout
        self.min_bytes_per_second = min_bytes_per_second
        self._clock = clock
        self._started: float | None = None
        self._received = 0

    def next_wait(self) -> float:
        """Seconds the next read may take; 0 or less: the client is already too slow.

        The clock starts at the first call (when the body is first asked for)."""
        now = self._clock()
        if self._started is None:
            self._started = now
        earned = self._received / self.min_bytes_per_second
        return min(self.idle_timeout, self._started + self.idle_timeout + earned - now)

    def received(self, count: int) -> None:
        self._received += count

    def describe(self) -> str:
        """The rule, for the 408 answer."""
        return (
            f"the request body must keep coming: no pause longer than {self.idle_timeout:g} s "
            f"and at least {self.min_bytes_per_second:,.0f} bytes per second on average"
        )
