"""This project against a plain Celery setup, on the same Azurite, requests counted at a proxy.

    python -m bench.celery_reference [--quick] [--transactions N] [--chunk-rows N]
                                     [--workers N] [--processes N]
    python -m bench.celery_reference --matrix [--storage-latency-ms 0 10] [--shape NAME]...

With ``--matrix``, ``--shape`` (and the shape overrides) or ``--storage-latency-ms`` it runs
the shape matrix of :mod:`bench.matrix` instead: both systems on each generated shape, one
line per shape and latency. Without them, as below.

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

One round runs both systems back to back; ``--rounds`` rounds (default 3) alternate which
goes first, so neither always gets the quieter half. On these shared machines one pair can
differ from the next by a third, so the headline ratios are the **medians of the rounds'
own ratios** (each measured on the same minute's machine), printed with their range; the
request counts, which barely move, are the median round's.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.bare_pipeline import insert_batch_row
from bench.counting_proxy import CountingProxy
from bench.deployment import batch_file
from bench.end_to_end import DEMO_CUSTOMERS, DEMO_SEED
from bench.matrix_options import add_rounds_option, add_shape_options, shapes_from, wants_shapes
from bench.report import Cell, Report, base_parser
from bench.run import REPO_ROOT
from bench.shapes import ShapedBatch
from billing.demo.scenario import run_demo, run_stream
from billing.devtools.azurite import AzuriteInfo, AzuriteServer, azurite_dir, ensure_azurite
from shared import meter
from shared.domain.pricebook import load_pricebook, sample_pricebook
from shared.warehouse import make_engine, upgrade

RowSource = Callable[[], Iterable[list[str]]]
"""The batch's rows as CSV fields, read afresh on each call (inside the timed window)."""

#: A plain Celery setup's chunk: the largest chunk whose rows fit one Azure queue message.
CHUNK_ROWS = 860
WORKER_READY_TIMEOUT = 60.0
RUN_TIMEOUT = 600.0
POLL_SAMPLES = 7
#: Transactions per shape in a matrix run unless ``--transactions`` says otherwise: the
#: twelve shapes, both systems, in minutes on two cores.
MATRIX_TRANSACTIONS = 50_000
#: One-row tasks each Celery run starts with, untimed: enough to reach every pool child.
WARM_UP_TASKS = 8


@dataclass(frozen=True)
class Run:
    """One system's run: its time and the requests the proxy saw meanwhile."""

    name: str
    transactions: int
    seconds: float
    requests: dict[str, int]
    note: str = ""
    #: This project's roles: CPU seconds per role over the run (empty for Celery).
    cpu_seconds: dict[str, float] = field(default_factory=dict)

    def cpu_us_per_transaction(self, role: str) -> float:
        return self.cpu_seconds.get(role, 0.0) * 1e6 / self.transactions

    @property
    def throughput(self) -> float:
        return self.transactions / self.seconds

    @property
    def per_thousand(self) -> float:
        return meter.total(self.requests) * 1000 / self.transactions


@dataclass(frozen=True)
class Round:
    """Both systems' runs of one round, in the order they ran."""

    celery: Run
    celery_plain: Run
    ours: Run
    ours_without_polls: Run
    stream: Run | None
    ours_first: bool

    @property
    def speed(self) -> float:
        """This project's throughput over Celery's with the same insert, this round."""
        return self.ours.throughput / self.celery.throughput


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("this project vs a plain Celery setup on the same Azurite")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS)
    parser.add_argument("--workers", type=int, default=2, help="Celery prefork children")
    parser.add_argument("--processes", type=int, default=2, help="billing processor processes")
    add_rounds_option(parser)
    parser.add_argument(
        "--stream-batches",
        type=int,
        default=None,
        help="also run this project with the transactions as this many batches back to back "
        "(default 5; 2 with --quick; 0: not)",
    )
    parser.add_argument(
        "--ours-first", action="store_true", help="run this project first in the first round"
    )
    add_shape_options(parser)
    args = parser.parse_args(argv)
    if wants_shapes(args):
        return run_shapes(args)
    transactions: int = args.transactions or (4_000 if args.quick else 200_000)
    rounds: int = args.rounds or (1 if args.quick else 3)
    stream_batches: int = (
        (2 if args.quick else 5) if args.stream_batches is None else (args.stream_batches)
    )
    report = Report(benchmark="celery_reference", quick=args.quick)

    done: list[Round] = []
    server = AzuriteServer(ensure_azurite(azurite_dir()))
    try:
        with CountingProxy(server.start()) as proxy:
            for index in range(rounds):
                ours_first = args.ours_first != (index % 2 == 1)
                print(f"  round {index + 1} of {rounds}", file=sys.stderr)
                done.append(
                    run_round(
                        proxy,
                        transactions,
                        chunk_rows=args.chunk_rows,
                        workers=args.workers,
                        processes=args.processes,
                        stream_batches=stream_batches,
                        ours_first=ours_first,
                    )
                )
    finally:
        server.close()

    add_rounds(report, done)
    median_round = sorted(done, key=lambda each: each.speed)[(len(done) - 1) // 2]
    add_comparison(report, median_round, done, args.chunk_rows, args.workers, args.processes)
    add_stream(report, done)
    report.emit(args.json)
    return 0


def run_shapes(args: argparse.Namespace) -> int:
    """``--matrix``, ``--shape`` or ``--storage-latency-ms``: the shape matrix, both systems."""
    from bench.matrix import add_matrix, run_matrix

    transactions: int = args.transactions or (2_000 if args.quick else MATRIX_TRANSACTIONS)
    report = Report(benchmark="celery_reference", quick=args.quick)
    runs = run_matrix(
        shapes_from(args, transactions),
        args.storage_latency_ms or [0.0],
        rounds=args.rounds or 1,
        processes=args.processes,
        workers=args.workers,
        chunk_rows=args.chunk_rows,
    )
    add_matrix(report, runs, backend="azurite")
    report.emit(args.json)
    return 0


def run_round(
    proxy: CountingProxy,
    transactions: int,
    *,
    chunk_rows: int,
    workers: int,
    processes: int,
    stream_batches: int,
    ours_first: bool,
) -> Round:
    """Both systems once, back to back (``ours_first``: this project, then Celery)."""
    if ours_first:
        ours = run_ours(proxy, transactions, processes)
    celery, celery_plain = run_celery(proxy, transactions, chunk_rows, workers)
    if not ours_first:
        ours = run_ours(proxy, transactions, processes)
    stream = (
        run_ours_stream(proxy, transactions, processes, stream_batches) if stream_batches else None
    )
    return Round(celery, celery_plain, *ours, stream, ours_first)


def run_celery(
    proxy: CountingProxy,
    transactions: int,
    chunk_rows: int,
    workers: int,
    *,
    batch: ShapedBatch | None = None,
    tables: Sequence[str] | None = None,
) -> list[Run]:
    """One Celery worker, one run per table of ``tables`` (default
    :data:`bench.celery_app.TABLES`), on ``batch`` (default: the demo's)."""
    # Imported here: Celery is an optional extra, and the other benchmarks must not need it.
    from bench.celery_app import BROKER_ENV, PRICEBOOK_ENV, QUEUE, TABLES, WAREHOUSE_ENV, app

    assert proxy.info is not None
    broker = broker_url(proxy.info)
    if batch is None:
        data = batch_file(transactions, seed=DEMO_SEED, customers=DEMO_CUSTOMERS)
        rows_of: RowSource = lambda: _csv_rows(data)  # noqa: E731
        pricebook: dict[str, str] = {}
        version = sample_pricebook().version_hash()
    else:
        rows_of = batch.rows
        pricebook = {PRICEBOOK_ENV: str(batch.pricebook)}
        version = load_pricebook(batch.pricebook.read_bytes()).version_hash()
    with tempfile.TemporaryDirectory(prefix="bench-celery-") as folder:
        warehouse = Path(folder) / "warehouse.sqlite3"
        prepare_warehouse(warehouse, version)
        log = Path(folder) / "worker.log"
        env = {**os.environ, BROKER_ENV: broker, WAREHOUSE_ENV: str(warehouse), **pricebook}
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
            return [
                _celery_run(proxy, table, rows_of, transactions, chunk_rows, warehouse, worker)
                for table in (tables or TABLES)
            ]
        finally:
            worker.terminate()  # Celery's warm shutdown
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


def _celery_run(
    proxy: CountingProxy,
    table: str,
    rows_of: RowSource,
    transactions: int,
    chunk_rows: int,
    warehouse: Path,
    worker: subprocess.Popen[bytes],
) -> Run:
    from bench.celery_app import PLAIN_TABLE, load_chunk

    stored = PLAIN_TABLE if table == "plain" else "charges"
    # Warm up first, outside the timing: each pool child's first task pays its imports,
    # the rater and the database connection, which the project's roles paid at start-up.
    first_row = next(iter(rows_of()))
    for n in range(WARM_UP_TASKS):
        warm_row = [f"warm-up-{n}", *first_row[1:]]
        load_chunk.apply_async(args=(table, -1, -1 - n, [warm_row]))
    wait_for_rows(warehouse, stored, WARM_UP_TASKS, worker)

    before = proxy.snapshot()
    started = time.perf_counter()
    reader = iter(rows_of())
    for chunk in itertools.count():
        rows = list(itertools.islice(reader, chunk_rows))
        if not rows:
            break
        load_chunk.apply_async(args=(table, chunk, chunk * chunk_rows + 1, rows))
    wait_for_rows(warehouse, stored, WARM_UP_TASKS + transactions, worker)
    seconds = time.perf_counter() - started
    return Run(
        f"celery ({table} table)", transactions, seconds, meter.diff(proxy.snapshot(), before)
    )


def broker_url(info: AzuriteInfo) -> str:
    """kombu's URL for Azurite: the account key, then the queue endpoint."""
    return f"azurestoragequeues://{info.key}@{info.endpoint(info.queue_port)}"


def _csv_rows(data: bytes) -> Iterator[list[str]]:
    """The rows of a CSV batch file, read as a plain Celery producer reads them."""
    reader = csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=""))
    next(reader)  # the header
    yield from reader


def prepare_warehouse(path: Path, pricebook_version: str) -> None:
    """The production schema, the batch row the charges refer to, and the plain table."""
    from bench.celery_app import create_plain_table

    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    try:
        insert_batch_row(engine, pricebook_version)
    finally:
        engine.dispose()
    with sqlite3.connect(path) as connection:
        create_plain_table(connection)


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


def wait_for_rows(
    warehouse: Path, table: str, expected: int, worker: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT
    with sqlite3.connect(warehouse) as connection:
        while time.monotonic() < deadline:
            if worker.poll() is not None:
                raise RuntimeError("the Celery worker exited during the run")
            (count,) = connection.execute(f"SELECT count(*) FROM {table}").fetchone()
            if count >= expected:
                return
            time.sleep(0.02)
    raise TimeoutError(f"the Celery run did not store {expected:,} charges in time")


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.is_file() else ""


def run_ours(
    proxy: CountingProxy, transactions: int, processes: int, batch: ShapedBatch | None = None
) -> tuple[Run, Run]:
    """The demo's run, counted whole and without its status polls.

    Each status poll costs what a ``GET /batches/{id}`` costs; that is measured at the end,
    with the roles still up, on a batch id that does not exist (the same record lookup),
    and multiplied by the demo's number of polls. The other roles' idle requests go on
    meanwhile, so the poll is measured :data:`POLL_SAMPLES` times and each kind's fewest
    requests taken."""
    print(f"  this project: {transactions:,} transactions", file=sys.stderr)
    marks: list[dict[str, int]] = []
    per_poll: dict[str, int] = {}
    where: list[tuple[str, str]] = []

    def ready(base_url: str, key: str) -> None:
        where.append((base_url, key))
        marks.append(proxy.snapshot())

    def measure_a_poll() -> None:
        marks.append(proxy.snapshot())
        base_url, key = where[0]
        samples = []
        for _ in range(POLL_SAMPLES):
            before = proxy.snapshot()
            httpx.get(
                f"{base_url}/batches/no-such-batch",
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
            samples.append(meter.diff(proxy.snapshot(), before))
        kinds = set().union(*samples)
        fewest = {kind: min(s.get(kind, 0) for s in samples) for kind in kinds}
        per_poll.update({kind: n for kind, n in fewest.items() if n})

    assert proxy.info is not None
    demo = run_demo(
        transactions=transactions,
        processes=processes,
        backend="azurite",
        storage_connection_string=proxy.info.connection_string,
        on_ready=ready,
        linger=measure_a_poll,
        batch=batch.upload if batch is not None else None,
    )
    if not demo.reconciled:
        raise RuntimeError(f"the demo batch did not reconcile: {demo.status}")
    before, after = marks
    whole = meter.diff(after, before)
    polls = {kind: n * demo.status_polls for kind, n in per_poll.items()}
    without = {kind: n - polls.get(kind, 0) for kind, n in whole.items()}
    return (
        Run("this project", transactions, demo.seconds, whole, cpu_seconds=demo.role_cpu_seconds),
        Run(
            "this project, status polls excluded",
            transactions,
            demo.seconds,
            without,
            note=f"{demo.status_polls} polls x "
            + ", ".join(f"{kind} {n}" for kind, n in sorted(per_poll.items())),
            cpu_seconds=demo.role_cpu_seconds,
        ),
    )


def run_ours_stream(proxy: CountingProxy, transactions: int, processes: int, batches: int) -> Run:
    """The same transactions as ``batches`` batches POSTed back to back (:func:`run_stream`),
    requests counted from the roles being ready until the last batch completed (its
    status polls included: one per batch at the end)."""
    print(f"  this project: {transactions:,} transactions in {batches} batches", file=sys.stderr)
    marks: list[dict[str, int]] = []
    assert proxy.info is not None
    stream = run_stream(
        batches=batches,
        transactions=transactions // batches,
        processes=processes,
        backend="azurite",
        storage_connection_string=proxy.info.connection_string,
        on_ready=lambda _url, _key: marks.append(proxy.snapshot()),
        linger=lambda: marks.append(proxy.snapshot()),
    )
    if not stream.reconciled:
        raise RuntimeError(f"a batch of the stream did not reconcile: {stream.statuses}")
    before, after = marks
    name = f"this project, {batches} batches back to back"
    return Run(name, stream.transactions, stream.seconds, meter.diff(after, before))


def add_rounds(report: Report, rounds: Sequence[Round]) -> None:
    """Every round's throughputs and ratios, in the order they ran."""
    rows: list[list[Cell]] = []
    for number, each in enumerate(rounds, start=1):
        stream = each.stream
        rows.append(
            [
                f"{number} ({'this project' if each.ours_first else 'Celery'} first)",
                each.celery.throughput,
                each.celery_plain.throughput,
                each.ours.throughput,
                each.speed,
                each.ours.throughput / each.celery_plain.throughput,
                stream.throughput if stream else "-",
                stream.throughput / each.celery.throughput if stream else "-",
            ]
        )
    report.table(
        f"{len(rounds)} rounds, transactions/s (vs Celery: within the round)",
        [
            "round",
            "Celery",
            "Celery, plain table",
            "this project",
            "vs Celery",
            "vs plain",
            "as a stream",
            "stream vs Celery",
        ],
        rows,
    )


def _median_and_range(values: Sequence[float]) -> tuple[float, str]:
    median = statistics.median(values)
    spread = f"rounds {min(values):.2f}-{max(values):.2f}" if len(values) > 1 else "one round"
    return median, spread


def add_stream(report: Report, rounds: Sequence[Round]) -> None:
    """The stream beside Celery's runs (Celery's tasks go out as its producer reads the
    file, so one batch is already a stream to it)."""
    streams = [(each.stream, each.celery) for each in rounds if each.stream is not None]
    if not streams:
        return
    ratio, spread = _median_and_range(
        [stream.throughput / celery.throughput for stream, celery in streams]
    )
    throughput = statistics.median(stream.throughput for stream, _ in streams)
    per_thousand = statistics.median(stream.per_thousand for stream, _ in streams)
    name = streams[0][0].name.removeprefix("this project, ")
    report.figure("ours_stream.transactions_per_second", throughput)
    report.figure("ours_stream_over_celery", ratio)
    report.figure("ours_stream.requests_per_1000", per_thousand)
    report.conclude(
        f"as a stream ({name}) this project runs at a median {ratio:.2f}x the Celery setup "
        f"({spread}; {throughput:,.0f} transactions/s), "
        f"{per_thousand:.2f} requests per 1,000 transactions"
    )


def add_comparison(
    report: Report,
    median_round: Round,
    rounds: Sequence[Round],
    chunk_rows: int,
    workers: int,
    processes: int,
) -> None:
    """The median round's runs with their requests; the headline ratios over all rounds."""
    production, plain = median_round.celery, median_round.celery_plain
    whole, without_polls = median_round.ours, median_round.ours_without_polls
    labels = {
        production.name: f"Celery 5 + kombu azurestoragequeues, {chunk_rows}-row tasks, "
        f"{workers} prefork workers; charges table and bulk loader (the project's insert)",
        plain.name: "the same Celery; a plain 16-column table, one executemany (the issue's)",
        whole.name: f"this project: initiator, {processes} processors, controller, embedded bus",
        without_polls.name: f"  the same run, its status polls excluded ({without_polls.note})",
    }
    rows: list[list[Cell]] = [
        [
            labels[run.name],
            run.seconds,
            run.throughput,
            run.throughput / production.throughput,
            meter.total(run.requests),
            run.per_thousand,
            ", ".join(f"{kind} {n}" for kind, n in sorted(run.requests.items())),
        ]
        for run in (production, plain, whole, without_polls)
    ]
    number = rounds.index(median_round) + 1
    report.table(
        f"{production.transactions:,} transactions, same file, same Azurite, requests at a "
        f"proxy: round {number} of {len(rounds)}, the median of this project / Celery",
        ["system", "seconds", "transactions/s", "vs Celery", "requests", "per 1,000 tx", "kinds"],
        rows,
    )
    speed, spread = _median_and_range([each.speed for each in rounds])
    plain_speed, plain_spread = _median_and_range(
        [each.ours.throughput / each.celery_plain.throughput for each in rounds]
    )
    requests_ratio = production.per_thousand / without_polls.per_thousand
    report.figure("rounds", len(rounds))
    report.figure(
        "celery.transactions_per_second", statistics.median(r.celery.throughput for r in rounds)
    )
    report.figure(
        "celery_plain.transactions_per_second",
        statistics.median(r.celery_plain.throughput for r in rounds),
    )
    report.figure(
        "ours.transactions_per_second", statistics.median(r.ours.throughput for r in rounds)
    )
    report.figure("ours_over_celery", speed)
    report.figure("ours_over_celery.lowest", min(each.speed for each in rounds))
    report.figure("ours_over_celery.highest", max(each.speed for each in rounds))
    report.figure("ours_over_celery_plain", plain_speed)
    report.figure("celery.requests_per_1000", production.per_thousand)
    report.figure("ours.requests_per_1000", whole.per_thousand)
    report.figure("ours.requests_per_1000_without_status_polls", without_polls.per_thousand)
    report.figure("celery_requests_over_ours", requests_ratio)
    report.conclude(
        f"this project runs at a median {speed:.2f}x the Celery setup's throughput with the "
        f"same insert ({spread}), {plain_speed:.2f}x Celery's into a plain table "
        f"({plain_spread}); storage requests per 1,000 transactions: "
        f"{without_polls.per_thousand:.2f} without status polls ({whole.per_thousand:.2f} with) "
        f"against Celery's {production.per_thousand:.2f} (Celery / this project "
        f"{requests_ratio:.2f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
