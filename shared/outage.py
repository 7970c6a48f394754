"""How long a dependency has been failing without a success in between.

A single failed request is weather: the SDK's retries and the caller's own handle it. A
dependency that has answered nothing but failures for longer than every retry would take is
an outage, and a role in one should report itself not ready, so that a platform stops sending
it work it cannot do (a restart would not help: liveness is left alone).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: Failures for this long, with no success between them, make an outage.
OUTAGE_AFTER_SECONDS = 30.0


class OutageClock:
    """Failures and successes of one dependency, reported by whoever uses it."""

    def __init__(
        self,
        name: str,
        after_seconds: float = OUTAGE_AFTER_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._after = after_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._failing_since: float | None = None
        self._last_failure = ""

    def failed(self, error: BaseException | str) -> None:
        with self._lock:
            if self._failing_since is None:
                self._failing_since = self._clock()
            self._last_failure = " ".join(str(error).split())[:200]

    def succeeded(self) -> None:
        with self._lock:
            self._failing_since = None

    def outage(self) -> str | None:
        """Why the dependency is in an outage (one line), or None."""
        with self._lock:
            since = self._failing_since
            if since is None:
                return None
            failing_for = self._clock() - since
            if failing_for < self._after:
                return None
            return f"{self.name} failing for {failing_for:.0f} s: {self._last_failure}"
