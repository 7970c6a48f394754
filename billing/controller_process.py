"""``billing controller``: one :class:`~controller.worker.ControllerWorker`, assembled by
:class:`~billing.deployment.Deployment`, until signalled.

SIGTERM (what Kubernetes, Container Apps and ``billing demo`` send) and SIGINT stop it
within :data:`STOP_TIMEOUT_SECONDS`: in-flight messages get that long to finish; one still
running is left undeleted and reappears for the next controller, which skips or applies it.
"""

from __future__ import annotations

import logging

from billing.deployment import Deployment
from controller.worker import ControllerWorker
from shared.lifecycle import run_until_signalled
from shared.provision import ensure_resources
from shared.role_health import Probe, RoleHealth, first_reason
from shared.settings import Settings

log = logging.getLogger(__name__)

#: Below the 5 s a supervisor usually grants between SIGTERM and SIGKILL.
STOP_TIMEOUT_SECONDS = 4.0


def listener_probe(worker: ControllerWorker) -> Probe:
    """Well while the worker's listener runs (it may be paused for a warehouse outage: that
    is the listener working as meant, and a restart would not bring the database back)."""

    def probe() -> str | None:
        return None if worker.listening else "the controller's listener is not running"

    return probe


def warehouse_probe(worker: ControllerWorker) -> Probe:
    """Ready while the warehouse answers: paused for an outage, the controller applies
    nothing (and a restart would not bring the database back, so liveness says well)."""

    def probe() -> str | None:
        return "the warehouse is unreachable" if worker.warehouse_unreachable else None

    return probe


def wedged_probe(worker: ControllerWorker) -> Probe:
    """Ready while no handler is stuck on one message past ``BILLING_WEDGED_HANDLER_SECONDS``:
    a stuck handler holds its dequeue thread and keeps its message's lease renewed, so
    neither that message nor the thread's next ones move."""

    def probe() -> str | None:
        return worker.wedged_handler

    return probe


def ready_probe(worker: ControllerWorker) -> Probe:
    """The controller's readiness: :func:`warehouse_probe`, then :func:`wedged_probe`."""
    return first_reason(warehouse_probe(worker), wedged_probe(worker))


def run_controller(settings: Settings, health: RoleHealth) -> None:
    """Provision, start, block until SIGTERM/SIGINT, stop; :func:`listener_probe` and
    :func:`ready_probe` in ``health`` meanwhile."""
    deployment = Deployment(settings, provision=False)
    worker = deployment.controller()

    def start() -> None:
        ensure_resources(settings, deployment.storage, deployment.bus)
        deployment.start(worker)
        health.register(listener_probe(worker), ready_probe=ready_probe(worker))

    def stop() -> None:
        health.withdraw()
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
