"""``billing serve --all-in-one``: initiator, processor and controller in one process.

Seed 004's *scale down*: a small deployment does not need separate workers. One process
serves the HTTP API (the same app as ``billing initiator``), runs one
:class:`~processor.worker.ProcessorWorker` and one :class:`~controller.worker.ControllerWorker`,
and they share one storage account (embedded or Azure, as the settings say) and one
:class:`~shared.bus.in_process.InProcessTriggerBus` — an in-memory subject in place of the
trigger topic, so no Service Bus is needed. The queues stay: the work is as durable as in a
scaled-out deployment, and separate workers pointed at the same storage could join in.

Start order: resources, controller (migrates the warehouse), processor, then HTTP, so that
the health check answers only once every role runs. Stop order (SIGTERM/SIGINT): HTTP stops
accepting and finishes its requests, then both workers stop at once, then the bus and the
storage close — all within :data:`STOP_TIMEOUT_SECONDS`.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import uvicorn

from controller.worker import ControllerWorker
from initiator.app import create_app
from initiator.serving import server_config
from processor.worker import ProcessorWorker
from shared.bus.in_process import InProcessTriggerBus
from shared.lifecycle import Shutdown
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage

log = logging.getLogger(__name__)

#: Everything stops within this after the signal: below the usual 5 s before SIGKILL.
STOP_TIMEOUT_SECONDS = 4.0
#: Of which HTTP gets this long (whole seconds, as uvicorn takes it) to finish its requests.
HTTP_GRACE_SECONDS = 1
#: How long start-up waits for the HTTP server to listen.
HTTP_START_TIMEOUT_SECONDS = 60.0
#: How often the main thread checks that the HTTP server is still running.
WATCH_SECONDS = 1.0


class AllInOne:
    """The three roles in this process, sharing one storage account and an in-process bus."""

    def __init__(self, settings: Settings, *, host: str, port: int) -> None:
        self.settings = settings
        self.storage = open_storage(settings)
        self.bus = InProcessTriggerBus(settings.trigger_topic)
        try:  # built first: an app that cannot start (no API key) fails before anything runs
            app = create_app(settings, connections=(self.storage, self.bus))
        except BaseException:
            self.storage.close()
            raise
        self.http = uvicorn.Server(
            server_config(
                app,
                settings,
                host=host,
                port=port,
                lifespan="on",  # a failing start-up must stop the server, not be skipped
                timeout_graceful_shutdown=HTTP_GRACE_SECONDS,
            )
        )
        self.controller = ControllerWorker(settings, self.storage, bus=self.bus)
        self.processor = ProcessorWorker(settings, self.storage, self.bus)
        self._http_thread = threading.Thread(target=self.http.run, name="http", daemon=True)
        self._started: list[str] = []

    def start(self) -> None:
        """Start every role; on failure, stop what started and re-raise."""
        try:
            ensure_resources(self.settings, self.storage, self.bus)
            self.controller.start()
            self._started.append("controller")
            self.processor.start()
            self._started.append("processor")
            self._start_http()
        except BaseException:
            self.stop()
            raise
        log.info("all-in-one: initiator, processor and controller running in one process")

    @property
    def serving(self) -> bool:
        """True while the HTTP server runs (it may end on its own, e.g. on a fatal error)."""
        return self._http_thread.is_alive()

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
        """Stop HTTP, then both workers, then close bus and storage. True if all was clean."""
        deadline = time.monotonic() + timeout
        try:
            http_clean = self._stop_http(min(HTTP_GRACE_SECONDS + 1.0, timeout))
            workers = {"processor": self.processor.stop, "controller": self.controller.stop}
            running = [workers[name] for name in self._started]
            self._started.clear()
            # In parallel: each gets until the deadline to let its in-flight messages end.
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="stop") as pool:
                workers_clean = all(pool.map(lambda stop: stop(_left(deadline)), running))
        finally:
            self.bus.close()
            self.storage.close()
        clean = http_clean and workers_clean
        log.info("all-in-one stopped (%s)", "clean" if clean else "some work was left running")
        return clean

    def _start_http(self) -> None:
        self._http_thread.start()
        deadline = time.monotonic() + HTTP_START_TIMEOUT_SECONDS
        while not self.http.started:
            if not self._http_thread.is_alive():
                raise RuntimeError("the HTTP server did not start (see the log above)")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the HTTP server did not start in {HTTP_START_TIMEOUT_SECONDS}s"
                )
            time.sleep(0.05)

    def _stop_http(self, timeout: float) -> bool:
        if not self._http_thread.is_alive():
            return True
        self.http.should_exit = True  # uvicorn notices within 0.1 s, then stops accepting
        self._http_thread.join(timeout)
        return not self._http_thread.is_alive()


def run_all_in_one(settings: Settings, *, host: str, port: int) -> bool:
    """Serve until SIGTERM/SIGINT (or until the HTTP server fails); True on a clean stop."""
    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    server = AllInOne(settings, host=host, port=port)
    server.start()
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


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)
