"""Storage requests per 1,000 transactions on the hot path, counted role by role.

One batch is taken from intake to the warehouse by the production code of each role, one
role after the other, and the meter (every operation of the embedded backend, as every HTTP
request of the Azure SDKs) is read around each:

1. **initiator**: :class:`~initiator.acceptance.BatchAcceptance` accepts the batch file;
2. **processor**: a listener + rating step in a child process drains the work items
   (:func:`bench.drain.drain`, with the threads the default scaling rule gives that depth);
3. **controller**: a :class:`~controller.worker.ControllerWorker` drains the results into
   the warehouse until the batch is completed and reconciled.

Running the roles in turn rather than at once changes nothing in what each one asks of
storage per chunk, and it keeps start-up and idle requests out of the count: what is left is
the cost of the work itself, including the empty receives of threads that run out of work.
It also gives each role's CPU time on its own (``process_time`` of this process around the
initiator and the controller, the drain's children for the processor): CPU per transaction
barely moves when other work shares the machine, unlike the clock. Each role runs with the
garbage collector as its own process sets it (:mod:`shared.gc_tuning`, from
``gc_young_threshold``), here only around its step, so that the other benchmarks of this
process keep Python's defaults.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import select

from bench.deployment import Deployment, batch_file
from bench.drain import drain
from shared import meter
from shared.gc_tuning import tune_collector
from shared.listener_settings import listener_config
from shared.warehouse import Batch, make_engine

COMPLETION_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class HotPath:
    transactions: int
    chunks: int
    #: role → request kind → count
    requests: dict[str, dict[str, int]]
    reconciled: bool
    #: role → CPU seconds it spent on the batch
    cpu_seconds: dict[str, float]

    def cpu_us_per_transaction(self, role: str) -> float:
        return self.cpu_seconds[role] * 1e6 / self.transactions

    def per_thousand(self, role: str | None = None) -> float:
        roles = [role] if role else list(self.requests)
        return sum(meter.total(self.requests[r]) for r in roles) * 1000 / self.transactions


def count_hot_path(deployment: Deployment, transactions: int) -> HotPath:
    """Push one generated batch through the three roles; the requests each one made."""
    settings = deployment.settings
    data = batch_file(transactions)
    with role_collector(settings.gc_young_threshold):
        before, cpu_before = meter.snapshot(), time.process_time()
        record = deployment.accept_body(data)
        initiator = meter.diff(meter.snapshot(), before)
        initiator_cpu = time.process_time() - cpu_before

    threads = listener_config(settings).rule.optimal_threads(record.chunks)
    drained = drain(settings, threads=threads, items=record.chunks)

    with role_collector(settings.gc_young_threshold):
        before, cpu_before = meter.snapshot(), time.process_time()
        worker = deployment.controller(trigger=False)
        worker.start()
        try:
            reconciled = _wait_completed(settings.resolved_warehouse_url, record.batch_id)
        finally:
            worker.stop(10)
        controller = meter.diff(meter.snapshot(), before)
        controller_cpu = time.process_time() - cpu_before
    return HotPath(
        transactions=record.transactions,
        chunks=record.chunks,
        requests={"initiator": initiator, "processor": drained.requests, "controller": controller},
        reconciled=reconciled,
        cpu_seconds={
            "initiator": initiator_cpu,
            "processor": drained.cpu_seconds,
            "controller": controller_cpu,
        },
    )


@contextmanager
def role_collector(young_threshold: int) -> Iterator[None]:
    """The collector as a role process sets it (:func:`~shared.gc_tuning.tune_collector`),
    for the block only: Python's thresholds and an unfrozen heap again after it."""
    thresholds = gc.get_threshold()
    tune_collector(young_threshold)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def _wait_completed(warehouse_url: str, batch_id: str) -> bool:
    """Poll the warehouse (SQL, not storage) until the batch closes; whether it reconciled."""
    engine = make_engine(warehouse_url)
    query = select(Batch.status, Batch.reconciled).where(Batch.batch_id == batch_id)
    deadline = time.monotonic() + COMPLETION_TIMEOUT_SECONDS
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                row = connection.execute(query).one_or_none()
            if row is not None and row.status in ("completed", "failed"):
                return row.status == "completed" and bool(row.reconciled)
            time.sleep(0.05)
    finally:
        engine.dispose()
    raise TimeoutError(f"batch {batch_id} did not complete in {COMPLETION_TIMEOUT_SECONDS:.0f} s")
