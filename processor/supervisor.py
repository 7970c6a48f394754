"""``billing processor``: N listener processes, each a :class:`ProcessorWorker`.

Why processes: rating is CPU-bound, and the threads of one Python process share one core
(the GIL). So the supervisor runs one worker process per core (default ``os.cpu_count()``),
and inside each, the listener's threads overlap storage I/O. Processes are started with
``spawn`` — a clean interpreter, no inherited locks or SQLite connections, the same on Linux,
macOS and Windows.

Shutdown: SIGTERM or SIGINT to the supervisor sets a shared stop event; every worker stops
receiving, finishes its in-flight messages (up to the visibility timeout: what is not
finished by then reappears for another instance anyway) and exits. A worker also stops when
it gets the signal itself (Ctrl-C reaches the whole process group) or when the supervisor
is gone. A worker that dies is restarted after a growing delay.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event as ProcessEvent
from types import FrameType

from shared.bus import open_bus
from shared.domain.priority import Priority
from shared.lifecycle import Shutdown
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from shared.telemetry import configure_logging

log = logging.getLogger(__name__)

#: How often a worker process looks at the supervisor's stop event (a local check).
CHILD_CHECK_SECONDS = 0.2
#: Restart delays for a worker that keeps dying: 1 s, 2 s, 4 s … up to this.
MAX_RESTART_DELAY = 30.0
#: A worker that ran this long before dying is restarted at once, with a fresh count.
HEALTHY_UPTIME = 60.0


@dataclass
class _Slot:
    number: int
    process: SpawnProcess | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float = 0.0


class ProcessorSupervisor:
    """Starts, watches and stops the worker processes."""

    def __init__(
        self, settings: Settings, *, processes: int, priorities: Sequence[Priority]
    ) -> None:
        if processes < 1:
            raise ValueError("at least one processor process is needed")
        self._settings = settings
        self._priorities = list(priorities)
        self._context = multiprocessing.get_context("spawn")
        self._stop = self._context.Event()
        self._slots = [_Slot(number) for number in range(processes)]

    def start(self) -> None:
        """Create every resource once (not N times in parallel), then start the workers."""
        storage = open_storage(self._settings)
        bus = open_bus(self._settings)
        try:
            ensure_resources(self._settings, storage, bus)
        finally:
            bus.close()
            storage.close()
        for slot in self._slots:
            self._launch(slot)
        log.info(
            "%d processor processes started (%s priority work)",
            len(self._slots),
            ",".join(self._priorities),
        )

    def watch(self, shutdown: Shutdown, interval: float = 1.0) -> None:
        """Restart workers that died until a shutdown is requested."""
        while not shutdown.wait(interval):
            now = time.monotonic()
            for slot in self._slots:
                self._revive(slot, now)

    def stop(self, timeout: float) -> bool:
        """Ask every worker to stop; kill those still running after ``timeout``."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        running = [slot.process for slot in self._slots if slot.process is not None]
        for process in running:
            process.join(max(deadline - time.monotonic(), 0.0))
        stragglers = [process for process in running if process.is_alive()]
        for process in stragglers:
            log.warning("processor process %s did not stop in time: killing it", process.pid)
            process.kill()
            process.join()
        return not stragglers

    @property
    def pids(self) -> list[int]:
        return [s.process.pid for s in self._slots if s.process and s.process.pid is not None]

    def _launch(self, slot: _Slot) -> None:
        process = self._context.Process(
            target=run_worker_process,
            args=(self._settings, self._priorities, self._stop),
            name=f"processor-{slot.number}",
        )
        process.start()
        slot.process, slot.started = process, time.monotonic()

    def _revive(self, slot: _Slot, now: float) -> None:
        process = slot.process
        if process is None or process.is_alive() or self._stop.is_set():
            return
        if slot.restart_at == 0.0:  # just noticed: schedule the restart
            slot.failures = 1 if now - slot.started > HEALTHY_UPTIME else slot.failures + 1
            delay = min(2.0 ** (slot.failures - 1), MAX_RESTART_DELAY)
            slot.restart_at = now + delay
            log.error(
                "processor process %s exited with %s; restarting in %.0f s",
                process.pid,
                process.exitcode,
                delay,
            )
        if now >= slot.restart_at:
            slot.restart_at = 0.0
            self._launch(slot)


def run_processors(settings: Settings, *, processes: int, priorities: Sequence[Priority]) -> bool:
    """The ``billing processor`` command: run until SIGTERM/SIGINT; True on a clean stop."""
    shutdown = Shutdown()
    shutdown.install_signal_handlers()
    supervisor = ProcessorSupervisor(settings, processes=processes, priorities=priorities)
    supervisor.start()
    try:
        supervisor.watch(shutdown)
    finally:
        # Past the workers' own grace (the visibility timeout) only a stuck handler remains.
        clean = supervisor.stop(settings.visibility_timeout_seconds + 5.0)
    log.info("processors stopped (%s)", "clean" if clean else "some were killed")
    return clean


def run_worker_process(
    settings: Settings, priorities: Sequence[Priority], stop: ProcessEvent
) -> None:
    """The body of one worker process (module-level, so that ``spawn`` can import it)."""
    from processor.worker import ProcessorWorker  # imported in the child only

    configure_logging()
    local_stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        local_stop.set()  # only set a flag: the main loop below does the stopping

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    parent = multiprocessing.parent_process()
    storage = open_storage(settings)
    bus = open_bus(settings)
    worker = ProcessorWorker(settings, storage, bus, priorities=priorities)
    try:
        worker.start()
        while not local_stop.wait(CHILD_CHECK_SECONDS):
            if stop.is_set() or (parent is not None and not parent.is_alive()):
                break
    finally:
        worker.stop()
        bus.close()
        storage.close()
    log.info("processor process %d exiting", os.getpid())
