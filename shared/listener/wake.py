"""The wake-up call for dequeue threads sleeping in their empty-queue back-off.

A trigger's scale-up only starts *missing* threads. But a thread that is
already there may be asleep for up to ``max_idle`` (30 s by default) when a trigger says
work has arrived; for a small batch the scaling rule wants no extra thread, so without a
wake-up the work would wait out that sleep. A trigger, and a stop, therefore interrupt
every back-off sleep.

The signal also remembers when it last rang, for a listener whose work *follows* its
trigger rather than coming with it (``ListenerConfig.wake_hold``): the controller is
told of a batch when its work items are queued, and its results only come once a
processor has rated the first chunk. Empty receives that soon after a trigger are
expected, so they do not lengthen the back-off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class WakeSignal:
    """Sleeps that end early when :meth:`wake` is called after they began (or after the
    :attr:`generation` they are given: a wake during the round before is not lost)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._changed = threading.Condition()
        self._generation = 0
        self._clock = clock
        self._woken_at = float("-inf")

    def wake(self, *, hold: bool = True) -> None:
        """End every sleep under way; ``hold``: a trigger, which :meth:`woken_within` counts."""
        with self._changed:
            self._generation += 1
            if hold:
                self._woken_at = self._clock()
            self._changed.notify_all()

    def woken_within(self, seconds: float) -> bool:
        """True if a holding :meth:`wake` came less than ``seconds`` ago (by the clock given)."""
        with self._changed:
            return self._clock() - self._woken_at < seconds

    @property
    def generation(self) -> int:
        """How many wakes so far: pass it to :meth:`sleep` to count wakes from now on."""
        with self._changed:
            return self._generation

    def sleep(self, seconds: float, since: int | None = None) -> bool:
        """Sleep up to ``seconds``; True if woken before the time was up, or already woken
        since ``since`` (a :attr:`generation`)."""
        with self._changed:
            began = self._generation if since is None else since
            return self._changed.wait_for(lambda: self._generation != began, timeout=seconds)
