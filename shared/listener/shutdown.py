"""Wait for SIGTERM or SIGINT, then let the caller stop its listener gracefully.

A container orchestrator sends SIGTERM and waits a grace period before killing; a developer
presses Ctrl-C. Either way the worker should stop receiving, finish what it holds, and
exit. The signal handler only sets an event — all real work happens in the main thread.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterable
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def wait_for_stop_signal(
    signals: Iterable[signal.Signals] = STOP_SIGNALS, stop: threading.Event | None = None
) -> signal.Signals | None:
    """Block until one of ``signals`` arrives (or ``stop`` is set); return the signal.

    Must run in the main thread (Python delivers signals there). The previous handlers are
    restored before returning, so a second Ctrl-C during shutdown behaves as usual.
    """
    stop = stop or threading.Event()
    received: list[signal.Signals] = []

    def on_signal(number: int, _frame: FrameType | None) -> None:
        received.append(signal.Signals(number))
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in signals}
    try:
        # A timeout keeps the main thread waking up, so the handler runs promptly.
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return received[0] if received else None
