"""``billing serve --all-in-one``: initiator, processor and controller in one process.

Scale-down to one process (docs/patterns.md): a small deployment does not need separate
workers. One process serves the HTTP API (the same app as ``billing initiator``), runs one
:class:`~processor.worker.ProcessorWorker` and one
:class:`~controller.worker.ControllerWorker`, and they share one storage account (embedded
or Azure, as the settings say) and one :class:`~shared.bus.in_process.InProcessTriggerBus` —
an in-memory subject in place of the trigger topic, so no Service Bus is needed. The queues
stay: the work is as durable as in a scaled-out deployment, and separate workers pointed at
the same storage could join in.

Start order: resources, controller (migrates the warehouse), processor, then HTTP, so that
the health check answers only once every role runs. Stop order (SIGTERM/SIGINT): HTTP stops
accepting and finishes its requests, then both workers stop at once, then the bus and the
storage close — all within :data:`STOP_TIMEOUT_SECONDS`.
"""

from __future__ import annotations

import logging

from billing.deployment import Deployment
from billing.runtime import tune_runtime
from shared.bus.in_process import InProcessTriggerBus
from shared.lifecycle import Shutdown
from shared.provision import ensure_resources
from shared.settings import Settings

log = logging.getLogger(__name__)

#: Everything stops within this after the signal: below the usual 5 s before SIGKILL.
STOP_TIMEOUT_SECONDS = 4.0
#: Of which HTTP gets this long (whole seconds, as uvicorn takes it) to finish its requests.
HTTP_GRACE_SECONDS = 1
#: How often the main thread checks that the HTTP server is still running.
WATCH_SECONDS = 1.0


class AllInOne:
    """The three roles in this process, sharing one storage account and an in-process bus."""

    def __init__(self, settings: Settings, *, host: str, port: int) -> None:
        self.settings = settings
        self.deployment = Deployment(
            settings, bus=InProcessTriggerBus(settings.trigger_topic), provision=False
        )
        try:  # built first: an app that cannot start (no API key) fails before anything runs
            self.http = self.deployment.initiator(
                host=host, port=port, grace_seconds=HTTP_GRACE_SECONDS
            )
        except BaseException:
            self.deployment.close()
            raise
        self.storage, self.bus = self.deployment.storage, self.deployment.bus
        self.controller = self.deployment.controller()
        self.processor = self.deployment.processor()

    def start(self) -> None:
        """Start every role; on failure, stop what started and re-raise."""
        try:
            ensure_resources(self.settings, self.storage, self.bus)
            self.deployment.start(self.controller)
            self.deployment.start(self.processor)
            self.deployment.start(self.http, front=True)
        except BaseException:
            self.stop()
            raise
        log.info("all-in-one: initiator, processor and controller running in one process")

    @property
    def serving(self) -> bool:
        """True while the HTTP server runs (it may end on its own, e.g. on a fatal error)."""
        return self.http.serving

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
        """Stop HTTP, then both workers, then close bus and storage. True if all was clean."""
        try:
            clean = self.deployment.stop(timeout)
        finally:
            self.deployment.close()
        log.info("all-in-one stopped (%s)", "clean" if clean else "some work was left running")
        return clean


def run_all_in_one(settings: Settings, *, host: str, port: int) -> bool:
    """Serve until SIGTERM/SIGINT (or until the HTTP server fails); True on a clean stop."""
    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    server = AllInOne(settings, host=host, port=port)
    server.start()
    tune_runtime(settings, event_loop=True)
    failed = False
    try:
        while not shutdown.wait(WATCH_SECONDS):
            if not server.serving:
                log.error("the HTTP server ended on its own; stopping the workers")
                failed = True
                break
    finally:
        clean = server.stop()
    return clean and not failed
