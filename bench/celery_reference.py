"""This project against a plain Celery setup, on the same Azurite, requests counted at a proxy.

    python -m bench.celery_reference [--quick] [--transactions N] [--chunk-rows N]
                                     [--workers N] [--processes N]

Needs the ``bench`` extra (``pip install -e ".[bench]"``: Celery 5 and kombu's Azure
transport) and Azurite (``scripts/azurite.sh``). One Azurite (in memory) serves both runs,
behind :class:`bench.counting_proxy.CountingProxy`, so both systems' storage requests are
counted at the same place the same way; the two runs go back to back on the same file
(``billing demo``'s batch: CSV, 500 customers, random seed 7):

* **Celery**: :mod:`bench.celery_app` on kombu's ``azurestoragequeues`` transport, one
  worker with ``--workers`` prefork children; this process reads the file with
  ``csv.reader`` and sends ``--chunk-rows`` rows per task; each task rates its rows and
  inserts them with one ``executemany`` (the production schema, SQLite). Timed from the
  first row read to the last charge committed (this process polls the warehouse's row count,
  which costs no storage request);
* **this project**: :func:`billing.demo.scenario.run_demo` on the same Azurite (initiator,
  ``billing processor`` with ``--processes`` processes, controller, embedded bus), timed
  ``POST /batches`` → batch ``completed`` and reconciled.

Both windows count every request the proxy forwarded meanwhile, idle polls included; the
project's also holds the demo's status polls (one ``GET /batches/{id}`` every 0.25 s, each a
table read), which the Celery run does not need. Start-up (queue creation, provisioning) is
outside both windows, except the Celery producer's first send, which lists and creates the
queue (three requests).
"""

from __future__ import annotations

import csv
import io
import itertools
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.bare_pipeline import insert_batch_row
from bench.counting_proxy import CountingProxy
from bench.deployment import batch_file
from bench.end_to_end import DEMO_CUSTOMERS, DEMO_SEED
from bench.report import Cell, Report, base_parser
from bench.run import REPO_ROOT
from billing.demo.scenario import run_demo
from billing.devtools.azurite import AzuriteInfo, AzuriteServer, azurite_dir, ensure_azurite
from shared import meter
from shared.domain.pricebook import sample_pricebook
from shared.warehouse import make_engine, upgrade

#: The issue's Celery setup: the largest chunk whose rows fit one Azure queue message.
CHUNK_ROWS = 860
WORKER_READY_TIMEOUT = 60.0
RUN_TIMEOUT = 600.0


@dataclass(frozen=True)
class Run:
    """One system's run: its time and the requests the proxy saw meanwhile."""

    name: str
    transactions: int
    seconds: float
    requests: dict[str, int]

    @property
    def throughput(self) -> float:
        return self.transactions / self.seconds

    @property
    def per_thousand(self) -> float:
        return meter.total(self.requests) * 1000 / self.transactions


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("this project vs a plain Celery setup on the same Azurite")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS)
    parser.add_argument("--workers", type=int, default=2, help="Celery prefork children")
    parser.add_argument("--processes", type=int, default=2, help="billing processor processes")
    args = parser.parse_args(argv)
    transactions: int = args.transactions or (4_000 if args.quick else 200_000)
    report = Report(benchmark="celery_reference", quick=args.quick)

    server = AzuriteServer(ensure_azurite(azurite_dir()))
    try:
        with CountingProxy(server.start()) as proxy:
            assert proxy.info is not None
            print(f"  celery: {transactions:,} transactions", file=sys.stderr)
            celery = run_celery(proxy, transactions, args.chunk_rows, args.workers)
            print(f"  this project: {transactions:,} transactions", file=sys.stderr)
            ours = run_ours(proxy, transactions, args.processes)
    finally:
        server.close()

    add_comparison(report, celery, ours, args.chunk_rows, args.workers, args.processes)
    report.emit(args.json)
    return 0


def run_celery(proxy: CountingProxy, transactions: int, chunk_rows: int, workers: int) -> Run:
    # Imported here: Celery is an optional extra, and the other benchmarks must not need it.
    from bench.celery_app import BROKER_ENV, QUEUE, WAREHOUSE_ENV, app, load_chunk

    assert proxy.info is not None
    broker = broker_url(proxy.info)
    data = batch_file(transactions, seed=DEMO_SEED, customers=DEMO_CUSTOMERS)
    with tempfile.TemporaryDirectory(prefix="bench-celery-") as folder:
        warehouse = Path(folder) / "warehouse.sqlite3"
        prepare_warehouse(warehouse)
        log = Path(folder) / "worker.log"
        env = {**os.environ, BROKER_ENV: broker, WAREHOUSE_ENV: str(warehouse)}
        command = [
            *(sys.executable, "-m", "celery", "-A", "bench.celery_app", "worker"),
            *("--pool", "prefork", "--concurrency", str(workers), "--queues", QUEUE),
            *("--without-heartbeat", "--without-gossip", "--without-mingle"),
            *("--loglevel", "INFO", "--logfile", str(log)),
        ]
        worker = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        try:
            wait_until_ready(worker, log)
            app.conf.broker_url = broker
            before = proxy.snapshot()
            started = time.perf_counter()
            reader = csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=""))
            next(reader)  # the header
            for chunk in itertools.count():
                rows = list(itertools.islice(reader, chunk_rows))
                if not rows:
                    break
                load_chunk.apply_async(args=(chunk, chunk * chunk_rows + 1, rows))
            wait_for_rows(warehouse, transactions, worker)
            seconds = time.perf_counter() - started
            requests = meter.diff(proxy.snapshot(), before)
        finally:
            worker.terminate()  # Celery's warm shutdown
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    return Run("celery", transactions, seconds, requests)


def broker_url(info: AzuriteInfo) -> str:
    """kombu's URL for Azurite: the account key, then the queue endpoint."""
    return f"azurestoragequeues://{info.key}@{info.endpoint(info.queue_port)}"


def prepare_warehouse(path: Path) -> None:
    """The production schema and the batch row the charges refer to."""
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    try:
        insert_batch_row(engine, sample_pricebook().version_hash())
    finally:
        engine.dispose()


def wait_until_ready(worker: subprocess.Popen[bytes], log: Path) -> None:
    """Until Celery's worker says it is ready (its pool forked, its queue declared)."""
    deadline = time.monotonic() + WORKER_READY_TIMEOUT
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise RuntimeError(f"the Celery worker exited: {_tail(log)}")
        if log.is_file() and " ready." in log.read_text(encoding="utf-8", errors="replace"):
            return
        time.sleep(0.1)
    raise TimeoutError(f"the Celery worker was not ready in {WORKER_READY_TIMEOUT:.0f} s")


def wait_for_rows(warehouse: Path, expected: int, worker: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT
    with sqlite3.connect(warehouse) as connection:
        while time.monotonic() < deadline:
            if worker.poll() is not None:
                raise RuntimeError("the Celery worker exited during the run")
            (count,) = connection.execute("SELECT count(*) FROM charges").fetchone()
            if count >= expected:
                return
            time.sleep(0.02)
    raise TimeoutError(f"the Celery run did not store {expected:,} charges in time")


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.is_file() else ""


def run_ours(proxy: CountingProxy, transactions: int, processes: int) -> Run:
    assert proxy.info is not None
    marks: list[dict[str, int]] = []
    demo = run_demo(
        transactions=transactions,
        processes=processes,
        backend="azurite",
        storage_connection_string=proxy.info.connection_string,
        on_ready=lambda _url, _key: marks.append(proxy.snapshot()),
        linger=lambda: marks.append(proxy.snapshot()),
    )
    if not demo.reconciled:
        raise RuntimeError(f"the demo batch did not reconcile: {demo.status}")
    before, after = marks
    return Run("this project", transactions, demo.seconds, meter.diff(after, before))


def add_comparison(
    report: Report, celery: Run, ours: Run, chunk_rows: int, workers: int, processes: int
) -> None:
    rows: list[list[Cell]] = [
        [
            label,
            run.seconds,
            run.throughput,
            meter.total(run.requests),
            run.per_thousand,
            ", ".join(f"{kind} {n}" for kind, n in sorted(run.requests.items())),
        ]
        for label, run in (
            (
                f"Celery 5 + kombu azurestoragequeues: {chunk_rows}-row tasks, "
                f"{workers} prefork workers, executemany per chunk",
                celery,
            ),
            (f"this project: initiator, {processes} processors, controller, embedded bus", ours),
        )
    ]
    report.table(
        f"{celery.transactions:,} transactions, same file, same Azurite, requests at a proxy",
        ["system", "seconds", "transactions/s", "requests", "per 1,000 tx", "kinds"],
        rows,
    )
    speed = ours.throughput / celery.throughput
    requests_ratio = celery.per_thousand / ours.per_thousand
    report.figure("celery.transactions_per_second", celery.throughput)
    report.figure("ours.transactions_per_second", ours.throughput)
    report.figure("ours_over_celery", speed)
    report.figure("celery.requests_per_1000", celery.per_thousand)
    report.figure("ours.requests_per_1000", ours.per_thousand)
    report.figure("celery_requests_over_ours", requests_ratio)
    report.conclude(
        f"this project runs at {speed:.2f}x the Celery setup's throughput "
        f"({ours.throughput:,.0f} vs {celery.throughput:,.0f} transactions/s) and makes "
        f"{ours.per_thousand:.2f} storage requests per 1,000 transactions against "
        f"Celery's {celery.per_thousand:.2f} (Celery / this project = {requests_ratio:.2f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
