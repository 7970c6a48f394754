"""The shape matrix: this project (and the Celery setup) on every batch shape, at each latency.

    python -m bench.celery_reference --matrix [--transactions N] [--storage-latency-ms 0 10]
    python -m bench.end_to_end --matrix --backend azurite [--storage-latency-ms 0 10]
    python -m bench.end_to_end --shape customers-20k --transactions 500000 --rounds 3
    python -m bench.celery_reference --shape saas --shape customers-200k --customers 50000

Each shape of :data:`bench.shapes.MATRIX` (or those named with ``--shape``) is written once
by :mod:`bench.shapes` (the batch and its pricebook) and read by both systems: this
project's roles get the file POSTed as it is (CSV, JSON Lines or gzip, the pricebook
uploaded first); the Celery producer reads the same bytes the way a plain producer would
(gunzip, ``csv.reader`` or ``json.loads``) and sends :data:`bench.celery_reference.CHUNK_ROWS`
rows per task, rated with the same pricebook. The lean loop
(:func:`bench.bare_pipeline.run_lean_loop`: gunzip, ``csv.reader`` or ``json.loads``, the
integer rater with the same pricebook, the bulk loader, in this process) stores the same
rows too: what the file costs Python at all. On Azurite both run behind one
:class:`~bench.counting_proxy.CountingProxy` per latency, which holds every storage request
``--storage-latency-ms`` ms, so the two systems see the same distance to storage.

For each shape, each latency and each round the lean loop, Celery (on Azurite) and this
project run back to back, in the reverse order every other round; the ratios are this
project's throughput over the lean loop's and over Celery's in the same round, and with
several rounds the median round's figures are printed (by the Celery ratio on Azurite, by
the lean one on the embedded backend), with every round's lean ratio beside them. One line
per shape and latency: throughputs, the ratios, each role's CPU µs per transaction (its
processes' CPU from the POST to the close, idle loops included) and storage requests per
1,000 transactions (this project's without the demo's status polls).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from bench.bare_pipeline import run_lean_loop
from bench.celery_reference import CHUNK_ROWS, Run, run_celery, run_ours
from bench.counting_proxy import CountingProxy
from bench.report import Cell, Report
from bench.shapes import Shape, ShapedBatch
from billing.demo.scenario import run_demo
from billing.devtools.azurite import AzuriteServer, azurite_dir, ensure_azurite
from shared.domain.pricebook import load_pricebook

ROLES = ("initiator", "processor", "controller")


@dataclass(frozen=True)
class ShapeRun:
    """One shape at one latency, one round: this project's run, the lean loop's and Celery's,
    if measured."""

    shape: Shape
    latency_ms: float
    ours: Run  # status polls excluded from its requests
    lean: Run
    celery: Run | None
    #: Every round's :attr:`over_lean`, in the order the rounds ran (set by run_matrix).
    rounds_over_lean: tuple[float, ...] = ()

    @property
    def ratio(self) -> float | None:
        """This project's throughput over Celery's, this round."""
        return self.ours.throughput / self.celery.throughput if self.celery else None

    @property
    def over_lean(self) -> float:
        """This project's throughput over the lean loop's, this round."""
        return self.ours.throughput / self.lean.throughput


def celery_available() -> bool:
    try:
        import celery  # noqa: F401
    except ImportError:
        return False
    return True


def run_matrix(
    shapes: Sequence[Shape],
    latencies: Sequence[float],
    *,
    backend: str = "azurite",
    with_celery: bool = True,
    rounds: int = 1,
    processes: int = 2,
    workers: int = 2,
    chunk_rows: int = CHUNK_ROWS,
) -> list[ShapeRun]:
    """Every shape at every latency, ``rounds`` times; returns the median round of each."""
    if backend != "azurite" and (with_celery or any(latencies)):
        raise ValueError("the Celery comparison and --storage-latency-ms need --backend azurite")
    results: list[ShapeRun] = []
    with ExitStack() as stack:
        proxies: dict[float, CountingProxy] = {}
        if backend == "azurite":
            server = AzuriteServer(ensure_azurite(azurite_dir()))
            stack.callback(server.close)
            upstream = server.start()
            for latency in latencies:
                proxies[latency] = stack.enter_context(CountingProxy(upstream, latency_ms=latency))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-shapes-")))
        for shape in shapes:
            batch = ShapedBatch.write(shape, folder)
            for latency in latencies:
                done = []
                for index in range(rounds):
                    print(
                        f"  {shape.name} at {latency:g} ms, round {index + 1} of {rounds}: "
                        f"{shape.describe()}",
                        file=sys.stderr,
                    )
                    proxy = proxies.get(latency)
                    done.append(
                        _one_round(
                            batch,
                            latency,
                            proxy,
                            ours_first=index % 2 == 1,
                            with_celery=with_celery,
                            processes=processes,
                            workers=workers,
                            chunk_rows=chunk_rows,
                        )
                    )
                every_round = tuple(run.over_lean for run in done)
                done.sort(key=lambda run: run.ratio or run.over_lean)
                results.append(replace(done[(len(done) - 1) // 2], rounds_over_lean=every_round))
            batch.path.unlink()
    return results


def _one_round(
    batch: ShapedBatch,
    latency: float,
    proxy: CountingProxy | None,
    *,
    ours_first: bool,
    with_celery: bool,
    processes: int,
    workers: int,
    chunk_rows: int,
) -> ShapeRun:
    """The lean loop, Celery and this project back to back; ``ours_first``: the other way."""
    if not ours_first:
        lean = run_lean(batch)
    else:
        ours = _run_project(batch, proxy, processes)
    celery: Run | None = None
    if with_celery:
        assert proxy is not None
        (celery,) = run_celery(
            proxy,
            batch.shape.transactions,
            chunk_rows,
            workers,
            batch=batch,
            tables=("production",),
        )
    if not ours_first:
        ours = _run_project(batch, proxy, processes)
    else:
        lean = run_lean(batch)
    return ShapeRun(batch.shape, latency, ours, lean, celery)


def _run_project(batch: ShapedBatch, proxy: CountingProxy | None, processes: int) -> Run:
    """This project's roles on the batch: on Azurite behind ``proxy``, or embedded."""
    transactions = batch.shape.transactions
    if proxy is not None:
        return run_ours(proxy, transactions, processes, batch)[1]
    demo = run_demo(transactions=transactions, processes=processes, batch=batch.upload)
    if not demo.reconciled:
        raise RuntimeError(f"{batch.shape.name}: the batch did not reconcile: {demo.status}")
    return Run(
        "this project",
        transactions,
        demo.seconds,
        demo.storage_requests,
        cpu_seconds=demo.role_cpu_seconds,
    )


def run_lean(batch: ShapedBatch) -> Run:
    """The lean loop on the batch's file, rated with its pricebook, into a fresh warehouse."""
    shape = batch.shape
    print(f"  lean loop: {shape.transactions:,} transactions", file=sys.stderr)
    data = batch.path.read_bytes()
    book = load_pricebook(batch.pricebook.read_bytes())
    with tempfile.TemporaryDirectory(prefix="bench-lean-") as folder:
        seconds = run_lean_loop(
            data,
            Path(folder) / "lean.sqlite3",
            pricebook=book,
            file_format=shape.file_format,
            gzip=shape.gzip,
        )
    return Run("lean loop", shape.transactions, seconds, {})


def add_matrix(report: Report, runs: Sequence[ShapeRun], *, backend: str) -> None:
    """One line per shape and latency, the shapes' axes, figures and the worst/best lines.

    The Celery columns appear when Celery ran, the column of every round's lean ratio when
    there were several rounds."""
    report.table(
        "shapes (bench/shapes.py; seed 7)",
        ["shape", "what"],
        [[shape.name, shape.describe()] for shape in _unique_shapes(runs)],
    )
    with_celery = any(run.celery is not None for run in runs)
    several = any(len(run.rounds_over_lean) > 1 for run in runs)
    rows: list[list[Cell]] = []
    for run in runs:
        cpu = [run.ours.cpu_us_per_transaction(role) for role in ROLES]
        row: list[Cell] = [
            run.shape.name,
            run.latency_ms,
            run.ours.throughput,
            run.lean.throughput,
            run.over_lean,
        ]
        if several:
            row.append(" / ".join(f"{ratio:.2f}" for ratio in run.rounds_over_lean))
        if with_celery:
            row += [run.celery.throughput if run.celery else "-", run.ratio or "-"]
        row += [*cpu, sum(cpu), run.ours.per_thousand]
        if with_celery:
            row.append(run.celery.per_thousand if run.celery else "-")
        rows.append(row)
        key = f"matrix.{run.shape.name}.{run.latency_ms:g}ms"
        report.figure(f"{key}.transactions_per_second", run.ours.throughput)
        report.figure(f"{key}.requests_per_1000", run.ours.per_thousand)
        for role, value in zip(ROLES, cpu, strict=True):
            report.figure(f"{key}.{role}.cpu_us_per_transaction", value)
        report.figure(f"{key}.lean.transactions_per_second", run.lean.throughput)
        report.figure(f"{key}.ours_over_lean", run.over_lean)
        if len(run.rounds_over_lean) > 1:
            report.figure(f"{key}.ours_over_lean.lowest", min(run.rounds_over_lean))
            report.figure(f"{key}.ours_over_lean.highest", max(run.rounds_over_lean))
        if run.celery is not None and run.ratio is not None:
            report.figure(f"{key}.celery.transactions_per_second", run.celery.throughput)
            report.figure(f"{key}.celery.requests_per_1000", run.celery.per_thousand)
            report.figure(f"{key}.ours_over_celery", run.ratio)
    rounds = max(len(run.rounds_over_lean) for run in runs) if runs else 1
    median = f"; the median of {rounds} rounds" if rounds > 1 else ""
    columns = ["shape", "latency ms", "project tx/s", "lean tx/s", "project / lean"]
    if several:
        columns.append("project / lean, each round")
    if with_celery:
        columns += ["Celery tx/s", "project / Celery"]
    columns += [
        "initiator µs/tx",
        "processor µs/tx",
        "controller µs/tx",
        "CPU µs/tx, 3 roles",
        "project req/1,000 tx",
    ]
    if with_celery:
        columns.append("Celery req/1,000 tx")
    report.table(
        f"shape matrix on {backend}: one line per shape and storage latency "
        f"(ratios: this project / the lean loop{' and / Celery' if with_celery else ''}, "
        f"same round{median})",
        columns,
        rows,
    )
    for latency in sorted({run.latency_ms for run in runs}):
        at = [run for run in runs if run.latency_ms == latency]
        fastest = max(at, key=lambda run: run.ours.throughput)
        slowest = min(at, key=lambda run: run.ours.throughput)
        worst = min(at, key=lambda run: run.over_lean)
        best = max(at, key=lambda run: run.over_lean)
        line = (
            f"at {latency:g} ms: this project's throughput ranges from "
            f"{slowest.ours.throughput:,.0f} tx/s ({slowest.shape.name}) to "
            f"{fastest.ours.throughput:,.0f} ({fastest.shape.name}); against the lean loop, "
            f"worst {worst.over_lean:.2f}x ({worst.shape.name}), "
            f"best {best.over_lean:.2f}x ({best.shape.name})"
        )
        report.figure(f"matrix.{latency:g}ms.worst_ours_over_lean", worst.over_lean)
        report.figure(f"matrix.{latency:g}ms.best_ours_over_lean", best.over_lean)
        compared = [run for run in at if run.ratio is not None]
        if compared:
            worst = min(compared, key=lambda run: run.ratio or 0.0)
            best = max(compared, key=lambda run: run.ratio or 0.0)
            line += (
                f"; against Celery, worst {worst.ratio:.2f}x ({worst.shape.name}), "
                f"best {best.ratio:.2f}x ({best.shape.name}), median "
                f"{statistics.median(run.ratio or 0.0 for run in compared):.2f}x"
            )
            report.figure(f"matrix.{latency:g}ms.worst_ratio", worst.ratio or 0.0)
            report.figure(f"matrix.{latency:g}ms.best_ratio", best.ratio or 0.0)
        report.conclude(line)


def _unique_shapes(runs: Sequence[ShapeRun]) -> list[Shape]:
    seen: dict[str, Shape] = {}
    for run in runs:
        seen.setdefault(run.shape.name, run.shape)
    return list(seen.values())
