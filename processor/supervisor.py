"""``billing processor``: N listener processes, each a :class:`ProcessorWorker`.

Why processes: rating is CPU-bound, and the threads of one Python process share one core
(the GIL). So the supervisor runs one worker process per core (by default the CPUs this
process may use: affinity and cgroup quota, :func:`processor.cpus.available_cpus`),
and inside each, the listener's threads overlap storage I/O. Processes are started with
``spawn`` — a clean interpreter, no inherited locks or SQLite connections, the same on Linux,
macOS and Windows.

Shutdown: SIGTERM or SIGINT to the supervisor sets a shared stop event; every worker stops
receiving, finishes its in-flight messages (up to the visibility timeout: what is not
finished by then reappears for another instance anyway) and exits. A worker also stops when
it gets the signal itself (Ctrl-C reaches the whole process group) or when the supervisor
is gone. A worker that dies is restarted after a growing delay.

Next step (docs/walkthrough.md): ``processor.worker``, what each worker process runs.
"""

from __future__ import annotations

import logging
import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event as ProcessEvent

from processor.wedged_report import WedgedReport
from shared.domain.priority import Priority
from shared.lifecycle import Shutdown
from shared.settings import Settings

log = logging.getLogger(__name__)

#: The body of one worker process: run until the stop event is set, writing its listener's
#: wedged handler (if any) into the report meanwhile.
WorkerMain = Callable[[Settings, Sequence[Priority], ProcessEvent, WedgedReport], None]
#: Restart delays for a worker that keeps dying: 1 s, 2 s, 4 s … up to this.
MAX_RESTART_DELAY = 30.0
#: A worker that ran this long before dying is restarted at once, with a fresh count.
HEALTHY_UPTIME = 60.0


@dataclass
class _Slot:
    number: int
    report: WedgedReport
    process: SpawnProcess | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float = 0.0


class ProcessorSupervisor:
    """Starts, watches and stops the worker processes."""

    def __init__(
        self,
        settings: Settings,
        *,
        processes: int,
        priorities: Sequence[Priority],
        worker_main: WorkerMain,
    ) -> None:
        """``worker_main`` is each process's body: module-level, so that ``spawn`` can import
        it; it runs one worker until the stop event is set."""
        if processes < 1:
            raise ValueError("at least one processor process is needed")
        self._settings = settings
        self._worker_main = worker_main
        self._priorities = list(priorities)
        self._context = multiprocessing.get_context("spawn")
        self._stop = self._context.Event()
        self._slots = [_Slot(number, WedgedReport(self._context)) for number in range(processes)]

    def start(self) -> None:
        """Start the workers (the caller has created the resources, once, not N times)."""
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
    def not_running(self) -> list[str]:
        """The worker processes that are dead or waiting for their restart, by name."""
        return [
            f"processor-{slot.number}"
            for slot in self._slots
            if slot.process is None or not slot.process.is_alive()
        ]

    @property
    def wedged(self) -> list[str]:
        """Why running worker processes are wedged (a handler stuck on one message), each
        named after its process."""
        reasons = []
        for slot in self._slots:
            process = slot.process
            reason = slot.report.read() if process is not None and process.is_alive() else None
            if reason is not None:
                reasons.append(f"processor-{slot.number}: {reason}")
        return reasons

    @property
    def pids(self) -> list[int]:
        return [s.process.pid for s in self._slots if s.process and s.process.pid is not None]

    def _launch(self, slot: _Slot) -> None:
        slot.report.write(None)  # what a process that died last wrote is no longer true
        process = self._context.Process(
            target=self._worker_main,
            args=(self._settings, self._priorities, self._stop, slot.report),
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
