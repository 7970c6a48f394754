"""What an idle processor reads each safety tick: the work signal's ETag, one ``HEAD``.

With every dequeue thread retired, the listener scans no queue while its last scan found
them all empty (``quiet_rescan_seconds``); this watch stands in for that scan and for the
gate's poll. When the signal moved (a batch's work items were sent, messages were redriven,
the gate was set: see :mod:`shared.coordination.work_signal`), ``on_change`` runs, and the
processor re-reads the gate and looks at the queues. So a lost trigger or a lost gate
broadcast costs at most one interval, and an idle hour costs 3,600 / interval requests
whatever the number of queues.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from shared.coordination.work_signal import work_signal_version
from shared.storage.ports import BlobContainer

log = logging.getLogger(__name__)


class ControlWatch:
    """Calls ``on_change`` from its own thread whenever the work signal's ETag moved."""

    def __init__(
        self,
        control: BlobContainer,
        *,
        on_change: Callable[[], None],
        interval: float,
        name: str = "control-watch",
    ) -> None:
        self._control = control
        self._on_change = on_change
        self._interval = interval
        self._version: str | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        """Read the signal once (the baseline: the caller looks at the queues and the gate
        right after), then watch it."""
        self._version = self._read()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _read(self) -> str | None:
        try:
            return work_signal_version(self._control)
        except Exception:  # storage down: the next tick tries again
            log.warning("could not read the work signal", exc_info=True)
            return None

    def _main(self) -> None:
        while not self._stopping.wait(self._interval):
            version = self._read()
            if version is None or version == self._version:
                continue
            self._version = version
            try:
                self._on_change()
            except Exception:
                log.exception("acting on the work signal failed; the next change retries")
