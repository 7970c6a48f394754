"""The wake-up call for dequeue threads sleeping in their empty-queue back-off.

A trigger's scale-up only starts *missing* threads. But a thread that is
already there may be asleep for up to ``max_idle`` (30 s by default) when a trigger says
work has arrived; for a small batch the scaling rule wants no extra thread, so without a
wake-up the work would wait out that sleep. A trigger, and a stop, therefore interrupt
every back-off sleep.
"""

from __future__ import annotations

import threading


class WakeSignal:
    """Sleeps that end early when :meth:`wake` is called after they began."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._generation = 0

    def wake(self) -> None:
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    def sleep(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True if woken before the time was up."""
        with self._changed:
            began = self._generation
            return self._changed.wait_for(lambda: self._generation != began, timeout=seconds)
