"""Running a role until SIGTERM/SIGINT (shared.lifecycle)."""

from __future__ import annotations

import os
import signal
import threading

from shared.lifecycle import run_until_signalled


def test_run_until_signalled_returns_on_sigterm_after_stopping() -> None:
    before = signal.getsignal(signal.SIGTERM)
    calls: list[str] = []
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        timer.start()
        run_until_signalled(lambda: calls.append("start"), lambda: calls.append("stop"))
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, before)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert calls == ["start", "stop"]
