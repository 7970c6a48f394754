"""One controller against two, on the same results, SQLite and PostgreSQL.

    python -m bench.controllers [--quick] [--transactions N] [--postgres URL]

A generated batch is accepted through the production intake and rated by the production
rating step (in this process), in the result format a deployment on that warehouse writes
(``BILLING_RESULT_FORMAT``: SQLite images for SQLite, JSON for PostgreSQL), which leaves its
result messages on the output queue; they are captured so that every run on that warehouse
reduces the same results. Each run puts them back, starts
``N`` controller processes (:class:`~controller.worker.ControllerWorker`, production wiring
and defaults) on a fresh warehouse, releases them together (a barrier, so start-up is not
timed) and stops the clock when the warehouse shows the batch completed and reconciled.
Counts alternate 1, 2, 1, 2 and the best run of each is kept. Printed: seconds,
transactions/s, the ratio of 2 to 1, and the controllers' CPU per transaction.

On SQLite a third variant runs in the same rounds: one controller whose handlers do not
take turns (:mod:`controller.write_turns`) but meet in SQLite's busy handler, as they did
before, so the turns' effect is a ratio measured side by side.

On SQLite the database has one writer, so a second controller can only overlap what is not
the insert; on PostgreSQL (``--postgres`` or ``BILLING_TEST_POSTGRES_URL``: a role that may
create databases) the two load charges side by side.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path

from sqlalchemy import select

from bench.charge_load import postgres_database
from bench.deployment import Deployment, open_deployment
from bench.drain import capture_work_items
from bench.report import Cell, Report, base_parser
from controller.worker import ControllerWorker
from processor.worker import rating_step
from shared.contracts.chunk_result import ResultFormat
from shared.settings import Settings
from shared.storage import open_storage
from shared.warehouse import Batch, make_engine, upgrade

TIMEOUT_SECONDS = 600.0


@dataclass(frozen=True)
class Variant:
    """How many controller processes reduce, and whether their handlers take turns."""

    controllers: int
    turns: bool = True

    @property
    def label(self) -> str:
        return f"{self.controllers}" + ("" if self.turns else ", handlers without turns")


ONE, TWO = Variant(1), Variant(2)
#: What each warehouse's deployments set BILLING_RESULT_FORMAT to (README, settings).
RESULT_FORMATS: dict[str, ResultFormat] = {"sqlite": "sqlite", "postgresql": "json"}
#: On SQLite also one controller whose handlers wait in SQLite's busy handler instead of
#: taking turns (controller.write_turns); on PostgreSQL there are no turns to compare.
VARIANTS = {"sqlite": (ONE, TWO, Variant(1, turns=False)), "postgresql": (ONE, TWO)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("1 vs 2 controllers on the same results, SQLite and PostgreSQL")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--postgres", default=os.environ.get("BILLING_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    transactions: int = args.transactions or (4_000 if args.quick else 200_000)
    rounds = 1 if args.quick else 2
    report = Report(benchmark="controllers", quick=args.quick)
    rows: list[list[Cell]] = []
    with open_deployment("embedded") as deployment:
        warehouses = ["sqlite", *(["postgresql"] if args.postgres else [])]
        for warehouse in warehouses:
            # in the result format a deployment on this warehouse uses (BILLING_RESULT_FORMAT)
            result_format = RESULT_FORMATS[warehouse]
            print(
                f"  accepting and rating {transactions:,} transactions ({result_format} results)",
                file=sys.stderr,
            )
            batch_id, results = _rated_batch(deployment, transactions, result_format)
            best: dict[Variant, tuple[float, float]] = {}
            for _ in range(rounds):
                for variant in VARIANTS[warehouse]:
                    print(f"  {warehouse}: {variant.label} controller(s)", file=sys.stderr)
                    with _warehouse(warehouse, args.postgres) as url:
                        seconds, cpu = _reduce(deployment, url, batch_id, results, variant)
                    if variant not in best or seconds < best[variant][0]:
                        best[variant] = (seconds, cpu)
            ratio = best[ONE][0] / best[TWO][0]
            for variant, (seconds, cpu) in best.items():
                rows.append(
                    [
                        warehouse,
                        variant.label,
                        seconds,
                        transactions / seconds,
                        best[ONE][0] / seconds,
                        cpu * 1e6 / transactions,
                    ]
                )
            report.figure(f"{warehouse}.one.transactions_per_second", transactions / best[ONE][0])
            report.figure(f"{warehouse}.two.transactions_per_second", transactions / best[TWO][0])
            report.figure(f"{warehouse}.two_over_one", ratio)
            report.conclude(f"{warehouse}: two controllers reduce at {ratio:.2f}x the speed of one")
            without = next((v for v in best if not v.turns), None)
            if without is not None:
                turns_ratio = best[without][0] / best[ONE][0]
                report.figure(f"{warehouse}.turns_speedup", turns_ratio)
                report.figure(
                    f"{warehouse}.one_without_turns.cpu_us_per_transaction",
                    best[without][1] * 1e6 / transactions,
                )
                report.conclude(
                    f"{warehouse}: handlers taking turns reduce at {turns_ratio:.2f}x the speed "
                    "of handlers meeting in SQLite's busy handler"
                )
        if not args.postgres:
            report.conclude("PostgreSQL skipped: give --postgres URL or BILLING_TEST_POSTGRES_URL")
    report.table(
        f"reducing {transactions:,} rated transactions ({len(results)} chunks); best of {rounds}",
        ["warehouse", "controllers", "seconds", "transactions/s", "vs one", "CPU µs per tx"],
        rows,
    )
    report.emit(args.json)
    return 0


def _rated_batch(
    deployment: Deployment, transactions: int, result_format: ResultFormat = "sqlite"
) -> tuple[str, list[str]]:
    """Accept and rate a batch; its result messages, taken off the output queue."""
    record = deployment.accept_batch(transactions)
    settings = deployment.settings.model_copy(update={"result_format": result_format})
    step = rating_step(settings, deployment.storage, "bench")
    for _, item in capture_work_items(deployment):
        step.handle(item)
    output = deployment.storage.queue(deployment.settings.output_queue)
    results: list[str] = []
    while messages := output.receive(32, 300):
        for message in messages:
            results.append(message.content)
            output.delete(message)
    return record.batch_id, results


def _reduce(
    deployment: Deployment, url: str, batch_id: str, results: list[str], variant: Variant
) -> tuple[float, float]:
    """Seconds until the variant's controllers have closed the batch; their CPU seconds."""
    settings = deployment.settings.model_copy(
        update={"warehouse_url": url, "controller_write_turns": variant.turns}
    )
    upgrade(url)
    output = deployment.storage.queue(settings.output_queue)
    output.clear()
    for message in results:
        output.send(message)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(variant.controllers + 1)
    done = context.Event()
    cpu: multiprocessing.Queue[float] = context.Queue()
    children = [
        context.Process(target=_controller, args=(settings, barrier, done, cpu), daemon=True)
        for _ in range(variant.controllers)
    ]
    for child in children:
        child.start()
    try:
        barrier.wait(timeout=120)
        started = time.perf_counter()
        _wait_completed(url, batch_id)
        seconds = time.perf_counter() - started
        done.set()
        cpu_seconds = sum(cpu.get(timeout=120) for _ in children)
    finally:
        done.set()
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.terminate()
    return seconds, cpu_seconds


def _controller(
    settings: Settings, barrier: Barrier, done: Event, cpu: multiprocessing.Queue[float]
) -> None:
    storage = open_storage(settings)
    worker = ControllerWorker(settings, storage)
    barrier.wait(timeout=120)
    started = time.process_time()
    worker.start()
    done.wait(TIMEOUT_SECONDS)
    worker.stop(10)
    cpu.put(time.process_time() - started)
    storage.close()


def _wait_completed(url: str, batch_id: str) -> None:
    engine = make_engine(url)
    query = select(Batch.status, Batch.reconciled).where(Batch.batch_id == batch_id)
    deadline = time.monotonic() + TIMEOUT_SECONDS
    try:
        while time.monotonic() < deadline:
            with engine.connect() as connection:
                row = connection.execute(query).one_or_none()
            if row is not None and row.status in ("completed", "failed"):
                if row.status != "completed" or not row.reconciled:
                    raise RuntimeError(f"batch {batch_id} closed {row.status}, not reconciled")
                return
            time.sleep(0.02)
    finally:
        engine.dispose()
    raise TimeoutError(f"batch {batch_id} not reduced in {TIMEOUT_SECONDS:.0f} s")


@contextmanager
def _warehouse(kind: str, server_url: str | None) -> Iterator[str]:
    """A fresh, empty warehouse: a SQLite file, or a database on the PostgreSQL server."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="bench-controllers-") as folder:
            yield f"sqlite:///{Path(folder) / 'warehouse.sqlite3'}"
        return
    assert server_url is not None
    with postgres_database(server_url, prefix="bench_controllers") as url:
        yield url


if __name__ == "__main__":
    raise SystemExit(main())
