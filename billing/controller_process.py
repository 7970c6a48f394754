"""``billing controller``: one :class:`~controller.worker.ControllerWorker`, assembled by
:class:`~billing.deployment.Deployment`, until signalled.

SIGTERM (what Kubernetes, Container Apps and ``billing demo`` send) and SIGINT stop it
within :data:`STOP_TIMEOUT_SECONDS`: in-flight messages get that long to finish; one still
running is left undeleted and reappears for the next controller, which skips or applies it.
"""

from __future__ import annotations

import logging

from billing.deployment import Deployment
from shared.lifecycle import run_until_signalled
from shared.liveness import Liveness, liveness_file
from shared.provision import ensure_resources
from shared.settings import Settings

log = logging.getLogger(__name__)

#: Below the 5 s a supervisor usually grants between SIGTERM and SIGKILL.
STOP_TIMEOUT_SECONDS = 4.0


def run_controller(settings: Settings) -> None:
    """Provision, start, block until SIGTERM/SIGINT, stop."""
    deployment = Deployment(settings, provision=False)
    worker = deployment.controller()
    liveness: Liveness | None = None

    def start() -> None:
        nonlocal liveness
        ensure_resources(settings, deployment.storage, deployment.bus)
        deployment.start(worker)
        liveness = liveness_file(settings, lambda: worker.snapshot().running)

    def stop() -> None:
        if liveness is not None:
            liveness.stop()
        try:
            clean = deployment.stop(STOP_TIMEOUT_SECONDS)
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
            deployment.close()

    run_until_signalled(start, stop)
