"""``billing processor``: a :class:`~processor.supervisor.ProcessorSupervisor` whose worker
processes each run one :class:`~processor.worker.ProcessorWorker`, assembled by
:class:`~billing.deployment.Deployment`, until signalled.

The resources are created once, here, before the workers start (not N times in parallel).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Sequence
from multiprocessing.synchronize import Event as ProcessEvent
from types import FrameType

from billing.deployment import Deployment
from billing.runtime import tune_runtime
from processor.supervisor import ProcessorSupervisor
from processor.wedged_report import WedgedReport
from shared.domain.priority import Priority
from shared.lifecycle import Shutdown
from shared.role_health import Probe, RoleHealth
from shared.settings import Settings
from shared.telemetry import configure_logging

log = logging.getLogger(__name__)

#: How often a worker process looks at the supervisor's stop event (a local check).
CHILD_CHECK_SECONDS = 0.2


def run_processors(
    settings: Settings,
    health: RoleHealth,
    *,
    processes: int,
    priorities: Sequence[Priority],
) -> bool:
    """Run until SIGTERM/SIGINT, with :func:`workers_probe` in ``health`` meanwhile; True on
    a clean stop."""
    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    with Deployment(settings):  # opened to create the resources, then closed
        pass
    supervisor = ProcessorSupervisor(
        settings, processes=processes, priorities=priorities, worker_main=run_worker_process
    )
    supervisor.start()
    health.register(workers_probe(supervisor), ready_probe=wedged_probe(supervisor))
    try:
        supervisor.watch(shutdown)
    finally:
        health.withdraw()
        # Past the workers' own grace (the visibility timeout) only a stuck handler remains.
        clean = supervisor.stop(settings.visibility_timeout_seconds + 5.0)
    log.info("processors stopped (%s)", "clean" if clean else "some were killed")
    return clean


def workers_probe(supervisor: ProcessorSupervisor) -> Probe:
    """Well while every worker process runs: one that died is restarted after a delay, and
    until then this replica rates less than it should (or nothing at all)."""

    def probe() -> str | None:
        down = supervisor.not_running
        return f"worker processes not running: {', '.join(down)}" if down else None

    return probe


def wedged_probe(supervisor: ProcessorSupervisor) -> Probe:
    """Ready while no worker process has a handler stuck on one message past
    ``BILLING_WEDGED_HANDLER_SECONDS``: a stuck handler holds its dequeue thread and keeps
    its message's lease renewed, so neither that chunk nor the thread's next ones move."""

    def probe() -> str | None:
        wedged = supervisor.wedged
        return "; ".join(wedged) if wedged else None

    return probe


def run_worker_process(
    settings: Settings, priorities: Sequence[Priority], stop: ProcessEvent, report: WedgedReport
) -> None:
    """The body of one worker process (module-level, so that ``spawn`` can import it).

    It stops when the supervisor's ``stop`` is set, when it gets SIGTERM/SIGINT itself
    (Ctrl-C reaches the whole process group) or when the supervisor is gone. Each look at
    those also writes its listener's wedged handler into ``report``, for the supervisor's
    readiness probe.
    """
    configure_logging()
    local_stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        local_stop.set()  # only set a flag: the main loop below does the stopping

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    parent = multiprocessing.parent_process()
    with Deployment(settings, provision=False) as deployment:
        worker = deployment.start(deployment.processor(priorities=priorities))
        tune_runtime(settings)
        while not local_stop.wait(CHILD_CHECK_SECONDS):
            report.write(worker.listener.wedged())
            if stop.is_set() or (parent is not None and not parent.is_alive()):
                break
        deployment.stop(settings.visibility_timeout_seconds)
        log.info("processor %s stopped", worker.instance_id)
    log.info("processor process %d exiting", os.getpid())
