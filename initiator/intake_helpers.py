"""The initiator's helper processes, which validate clean batch files in segments.

One pool per process (:func:`shared_helpers`), shared by its concurrent intakes and by
every app the process runs (all-in-one mode, a test session): helpers are a resource of the
machine, like its cores. The initiator starts it as it opens (:meth:`IntakeHelpers.start`),
so that the first batch does not wait for two Python processes to start and import the
reader (about 0.3 s each), and it ends with the process. Helpers are spawned,
not forked: the initiator runs threads (uvicorn, uploads, the sweeper), and a fork copies
their locks in whatever state they were. Each helper tunes its garbage collector as the
role does (:mod:`shared.gc_tuning`), since it allocates a transaction object per line too.

A helper exits when the initiator does, however the initiator ends. The pool's own
shutdown runs at interpreter exit, which a SIGTERM skips: uvicorn shuts down gracefully and
then re-raises the signal it caught, so the process dies by it, and a helper left waiting
for work would live on, orphaned (every ``billing demo`` left two behind). Each helper
therefore watches its parent's sentinel (:func:`multiprocessing.parent_process`) and exits
once it fires: after a SIGTERM, a kill -9 or a crash alike.
"""

from __future__ import annotations

import importlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from multiprocessing.process import BaseProcess
from pathlib import Path

from shared.closing import Closing
from shared.gc_tuning import tune_collector

log = logging.getLogger(__name__)

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
HELPER_MODULE = "initiator.intake.segments"
"""What a helper runs (``check_segment``): imported by :meth:`IntakeHelpers.start`."""


def helper_count(configured: int, *, cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """Helpers for ``BILLING_INTAKE_PROCESSES``: 0 means one per core when there are two
    or more (on one core they would only take turns with the request's thread)."""
    if configured:
        return 0 if configured == 1 else configured
    cores = available_cores(cpu_max)
    return cores if cores >= 2 else 0


def available_cores(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The cores this process may use: those it may run on, capped by its container's CPU
    quota (cgroup v2 ``cpu.max``, e.g. ``50000 100000`` for the half core Container Apps
    gives the initiator), since a container sees every core of its host."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
    except (OSError, ValueError):
        return cores
    if quota == "max":
        return cores
    return max(1, min(cores, math.ceil(int(quota) / int(period))))


class IntakeHelpers(Closing):
    """A pool of ``processes`` helpers, started by :meth:`start` or on first use (see the
    module docstring)."""

    def __init__(self, processes: int, *, gc_young_threshold: int) -> None:
        if processes < 1:
            raise ValueError("an intake helper pool needs at least one process")
        self.processes = processes
        self._gc_young_threshold = gc_young_threshold
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def started(self) -> bool:
        """Whether the pool is up (:meth:`start`, or a batch needed it)."""
        return self._pool is not None

    def pool(self) -> ProcessPoolExecutor:
        """The pool, started now if it was not (raises once closed)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the intake helpers are closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_helper,
                    initargs=(self._gc_young_threshold,),
                )
                log.info("started %d intake helper processes", self.processes)
            return self._pool

    def start(self) -> None:
        """Start every helper now and have it import what it runs, without waiting for
        them: one task each, since the pool spawns a process per task while none is idle.
        Does nothing if the pool is up already (another app of the process started it)."""
        if self.started:
            return
        pool = self.pool()
        for _ in range(self.processes):
            pool.submit(_preload, HELPER_MODULE).add_done_callback(partial(_loaded, HELPER_MODULE))

    def discard_broken(self, pool: ProcessPoolExecutor) -> None:
        """Forget ``pool`` after a helper died in it; the next :meth:`pool` starts anew."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_shared: dict[tuple[int, int], IntakeHelpers] = {}
_shared_lock = threading.Lock()


def shared_helpers(processes: int, *, gc_young_threshold: int) -> IntakeHelpers:
    """The process's pool of ``processes`` helpers (made on the first call)."""
    key = (processes, gc_young_threshold)
    with _shared_lock:
        helpers = _shared.get(key)
        if helpers is None:
            helpers = _shared[key] = IntakeHelpers(processes, gc_young_threshold=gc_young_threshold)
        return helpers


def _start_helper(gc_young_threshold: int) -> None:
    """In a new helper: tune its collector, and have it exit when its parent does."""
    tune_collector(gc_young_threshold)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_exit_with, args=(parent,), name="exit-with-initiator", daemon=True
        ).start()


def _exit_with(parent: BaseProcess) -> None:
    """Block until ``parent`` has exited, then end this process at once: nothing it holds
    (a segment being checked) has anyone left to return to."""
    multiprocessing.connection.wait([parent.sentinel])
    os._exit(0)


def _preload(module: str) -> None:
    """In a helper: import ``module`` (a module itself cannot travel back as the result)."""
    importlib.import_module(module)


def _loaded(module: str, future: Future[None]) -> None:
    """Say why a warm-up failed: the helper died (killed, out of memory), or it could not
    import ``module`` (a broken install, which every batch would then hit)."""
    if future.cancelled() or (error := future.exception()) is None:
        return
    if isinstance(error, BrokenProcessPool):
        log.warning(
            "an intake helper died while starting (%s); the next batch that needs the "
            "helpers is read by the serial reader, and a new pool starts after it",
            error,
        )
        return
    log.warning("an intake helper could not import %s", module, exc_info=error)
