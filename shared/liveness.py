"""A liveness file: a role touches it while it is healthy; a health check reads its age.

The processor and the controller serve no HTTP, so a container health check cannot ask
them anything. Instead, when ``BILLING_LIVENESS_FILE`` is set, the role touches that file
every ``BILLING_LIVENESS_INTERVAL_SECONDS`` as long as its own probe says it is well (the
processor: every worker process alive; the controller: its listener running), and
``billing-healthcheck`` calls the role healthy while the file is younger than a few
intervals. A hung or half-dead role stops touching it and turns unhealthy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from shared.settings import Settings

log = logging.getLogger(__name__)

#: A role is taken for dead after this many intervals without a touch.
MISSED_TOUCHES = 3


class LivenessFile:
    """Touches ``path`` every ``interval`` seconds while ``probe()`` is true, on a thread."""

    def __init__(self, path: Path, probe: Callable[[], bool], *, interval: float) -> None:
        self._path = path
        self._probe = probe
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="liveness", daemon=True)

    def start(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._path.unlink(missing_ok=True)  # a stopped role is not alive

    def _run(self) -> None:
        while True:
            try:
                if self._probe():
                    self._path.touch()
            except Exception:  # a failing probe means "not healthy", never a dead thread
                log.exception("liveness probe failed")
            if self._stop.wait(self._interval):
                return


def age_seconds(path: Path) -> float | None:
    """Seconds since ``path`` was last touched; ``None`` if it does not exist."""
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None


class Liveness(Protocol):
    def stop(self) -> None: ...


class _NoLivenessFile:
    def stop(self) -> None:
        pass


def liveness_file(settings: Settings, probe: Callable[[], bool]) -> Liveness:
    """Start touching ``BILLING_LIVENESS_FILE`` while ``probe()`` holds (if it is set)."""
    if settings.liveness_file is None:
        return _NoLivenessFile()
    liveness = LivenessFile(
        settings.liveness_file, probe, interval=settings.liveness_interval_seconds
    )
    liveness.start()
    return liveness
