"""``billing controller``: run one :class:`~controller.worker.ControllerWorker` until signalled.

SIGTERM (what Kubernetes, Container Apps and ``billing demo`` send) and SIGINT stop it
within :data:`STOP_TIMEOUT_SECONDS`: in-flight messages get that long to finish; one still
running is left undeleted and reappears for the next controller, which skips or applies it.
"""

from __future__ import annotations

import logging

from controller.worker import ControllerWorker
from shared.bus import open_bus
from shared.lifecycle import run_until_signalled
from shared.liveness import Liveness, liveness_file
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage

log = logging.getLogger(__name__)

#: Below the 5 s a supervisor usually grants between SIGTERM and SIGKILL.
STOP_TIMEOUT_SECONDS = 4.0


def run_controller(settings: Settings) -> None:
    """Provision, start, block until SIGTERM/SIGINT, stop."""
    storage = open_storage(settings)
    bus = open_bus(settings)
    worker = ControllerWorker(settings, storage, bus=bus)
    liveness: Liveness | None = None

    def start() -> None:
        nonlocal liveness
        ensure_resources(settings, storage, bus)
        worker.start()
        liveness = liveness_file(settings, lambda: worker.snapshot().running)

    def stop() -> None:
        if liveness is not None:
            liveness.stop()
        try:
            clean = worker.stop(STOP_TIMEOUT_SECONDS)
            snapshot = worker.snapshot()
            log.info(
                "controller %s stopped (%s): %d chunks applied, %d skipped, %d failures "
                "recorded, %d batches closed",
                snapshot.instance_id,
                "clean" if clean else "handlers still running",
                snapshot.chunks_applied,
                snapshot.chunks_skipped,
                snapshot.failures_recorded,
                snapshot.batches_closed,
            )
        finally:
            bus.close()
            storage.close()

    run_until_signalled(start, stop)
