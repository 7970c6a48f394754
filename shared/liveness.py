"""A liveness file: touched while the role is well; a health check reads its age.

The processor and the controller serve no HTTP of their own, so a compose health check
cannot ask them anything. Instead, when ``BILLING_LIVENESS_FILE`` is set, a thread touches
that file every ``BILLING_LIVENESS_INTERVAL_SECONDS`` while the role's
:class:`~shared.role_health.RoleHealth` says it is well (the probe the role registered, the
same one ``GET /healthz`` answers from), and ``billing-healthcheck`` calls the role healthy
while the file is younger than a few intervals. A role still starting has no file yet; a
hung, half-dead or stopping one stops touching it and turns unhealthy; a stopped one
removes it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shared.role_health import RoleHealth
from shared.settings import Settings

#: A role is taken for dead after this many intervals without a touch.
MISSED_TOUCHES = 3


class LivenessFile:
    """Touches ``path`` every ``interval`` seconds while ``health`` is well, on a thread."""

    def __init__(self, path: Path, health: RoleHealth, *, interval: float) -> None:
        self._path = path
        self._health = health
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
            if self._health.status().well:
                self._path.touch()
            if self._stop.wait(self._interval):
                return


def age_seconds(path: Path) -> float | None:
    """Seconds since ``path`` was last touched; ``None`` if it does not exist."""
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None


@contextmanager
def liveness_file(settings: Settings, health: RoleHealth) -> Iterator[None]:
    """Touch ``BILLING_LIVENESS_FILE`` while ``health`` is well, for the block (if it is set)."""
    if settings.liveness_file is None:
        yield
        return
    liveness = LivenessFile(
        settings.liveness_file, health, interval=settings.liveness_interval_seconds
    )
    liveness.start()
    try:
        yield
    finally:
        liveness.stop()
