"""The shape matrix: this project (and the Celery setup) on every batch shape, at each latency.

    python -m bench.celery_reference --matrix [--transactions N] [--storage-latency-ms 0 10]
    python -m bench.end_to_end --matrix --backend azurite [--storage-latency-ms 0 10]
    python -m bench.celery_reference --shape saas --shape customers-200k --customers 50000

Each shape of :data:`bench.shapes.MATRIX` (or those named with ``--shape``) is written once
by :mod:`bench.shapes` (the batch and its pricebook) and read by both systems: this
project's roles get the file POSTed as it is (CSV, JSON Lines or gzip, the pricebook
uploaded first); the Celery producer reads the same bytes the way a plain producer would
(gunzip, ``csv.reader`` or ``json.loads``) and sends :data:`bench.celery_reference.CHUNK_ROWS`
rows per task, rated with the same pricebook. On Azurite both run behind one
:class:`~bench.counting_proxy.CountingProxy` per latency, which holds every storage request
``--storage-latency-ms`` ms, so the two systems see the same distance to storage.

For each shape, each latency and each round the two systems run back to back (alternating
which goes first); the ratio is this project's throughput over Celery's in the same round,
and with several rounds the median round's figures are printed. One line per shape and
latency: throughputs, the ratio, each role's CPU µs per transaction (its processes' CPU from
the POST to the close, idle loops included) and storage requests per 1,000 transactions
(this project's without the demo's status polls).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from bench.celery_reference import CHUNK_ROWS, Run, run_celery, run_ours
from bench.counting_proxy import CountingProxy
from bench.report import Cell, Report
from bench.shapes import MATRIX, SPELLINGS, Shape, ShapedBatch
from billing.demo.scenario import run_demo
from billing.devtools.azurite import AzuriteServer, azurite_dir, ensure_azurite

ROLES = ("initiator", "processor", "controller")


@dataclass(frozen=True)
class ShapeRun:
    """One shape at one latency, one round: this project's run and Celery's, if measured."""

    shape: Shape
    latency_ms: float
    ours: Run  # status polls excluded from its requests
    celery: Run | None

    @property
    def ratio(self) -> float | None:
        return self.ours.throughput / self.celery.throughput if self.celery else None


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
                done.sort(key=lambda run: run.ratio or run.ours.throughput)
                results.append(done[(len(done) - 1) // 2])
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
    transactions = batch.shape.transactions
    if proxy is None:
        demo = run_demo(transactions=transactions, processes=processes, batch=batch.upload)
        if not demo.reconciled:
            raise RuntimeError(f"{batch.shape.name}: the batch did not reconcile: {demo.status}")
        ours = Run(
            "this project",
            transactions,
            demo.seconds,
            demo.storage_requests,
            cpu_seconds=demo.role_cpu_seconds,
        )
        return ShapeRun(batch.shape, latency, ours, None)
    celery: Run | None = None
    if ours_first:
        ours = run_ours(proxy, transactions, processes, batch)[1]
    if with_celery:
        (celery,) = run_celery(
            proxy, transactions, chunk_rows, workers, batch=batch, tables=("production",)
        )
    if not ours_first:
        ours = run_ours(proxy, transactions, processes, batch)[1]
    return ShapeRun(batch.shape, latency, ours, celery)


def add_matrix(report: Report, runs: Sequence[ShapeRun], *, backend: str) -> None:
    """One line per shape and latency, the shapes' axes, figures and the worst/best lines."""
    report.table(
        "shapes (bench/shapes.py; seed 7)",
        ["shape", "what"],
        [[shape.name, shape.describe()] for shape in _unique_shapes(runs)],
    )
    rows: list[list[Cell]] = []
    for run in runs:
        cpu = [run.ours.cpu_us_per_transaction(role) for role in ROLES]
        rows.append(
            [
                run.shape.name,
                run.latency_ms,
                run.ours.throughput,
                run.celery.throughput if run.celery else "-",
                run.ratio if run.ratio is not None else "-",
                *cpu,
                sum(cpu),
                run.ours.per_thousand,
                run.celery.per_thousand if run.celery else "-",
            ]
        )
        key = f"matrix.{run.shape.name}.{run.latency_ms:g}ms"
        report.figure(f"{key}.transactions_per_second", run.ours.throughput)
        report.figure(f"{key}.requests_per_1000", run.ours.per_thousand)
        for role, value in zip(ROLES, cpu, strict=True):
            report.figure(f"{key}.{role}.cpu_us_per_transaction", value)
        if run.celery is not None and run.ratio is not None:
            report.figure(f"{key}.celery.transactions_per_second", run.celery.throughput)
            report.figure(f"{key}.celery.requests_per_1000", run.celery.per_thousand)
            report.figure(f"{key}.ours_over_celery", run.ratio)
    report.table(
        f"shape matrix on {backend}: one line per shape and storage latency "
        "(ratio: this project / Celery, same round)",
        [
            "shape",
            "latency ms",
            "project tx/s",
            "Celery tx/s",
            "ratio",
            "initiator µs/tx",
            "processor µs/tx",
            "controller µs/tx",
            "CPU µs/tx, 3 roles",
            "project req/1,000 tx",
            "Celery req/1,000 tx",
        ],
        rows,
    )
    for latency in sorted({run.latency_ms for run in runs}):
        at = [run for run in runs if run.latency_ms == latency]
        fastest = max(at, key=lambda run: run.ours.throughput)
        slowest = min(at, key=lambda run: run.ours.throughput)
        line = (
            f"at {latency:g} ms: this project's throughput ranges from "
            f"{slowest.ours.throughput:,.0f} tx/s ({slowest.shape.name}) to "
            f"{fastest.ours.throughput:,.0f} ({fastest.shape.name})"
        )
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


def add_shape_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the batch's shape, the matrix and the storage latency."""
    group = parser.add_argument_group("batch shape (bench/shapes.py; any of these runs the matrix)")
    group.add_argument("--matrix", action="store_true", help="every shape of bench.shapes.MATRIX")
    group.add_argument(
        "--shape", action="append", choices=sorted(MATRIX), help="a named shape (repeatable)"
    )
    group.add_argument("--customers", type=int, help="override: customers per batch")
    group.add_argument("--skus", type=int, help="override: SKUs in the generated pricebook")
    group.add_argument("--tier-share", type=float, help="override: share of SKUs with 2 tiers")
    group.add_argument("--regions", type=int, help="override: regions in the pricebook")
    group.add_argument("--timestamps", choices=SPELLINGS, help="override: occurred_at spelling")
    group.add_argument("--format", choices=("csv", "jsonl"), help="override: file format")
    group.add_argument("--gzip", action=argparse.BooleanOptionalAction, help="override: gzip")
    group.add_argument(
        "--storage-latency-ms",
        type=float,
        nargs="+",
        default=None,
        help="hold every storage request this long at the counting proxy; several values "
        "run side by side (e.g. 0 10); needs Azurite",
    )


_OVERRIDES = {
    "customers": "customers",
    "skus": "skus",
    "tier_share": "tier_share",
    "regions": "regions",
    "timestamps": "timestamps",
    "format": "file_format",
    "gzip": "gzip",
}


def wants_shapes(args: argparse.Namespace) -> bool:
    """Whether the options ask for the shape matrix rather than the benchmark's own run."""
    return bool(
        args.matrix
        or args.shape
        or args.storage_latency_ms
        or any(getattr(args, option) is not None for option in _OVERRIDES)
    )


def shapes_from(args: argparse.Namespace, transactions: int) -> list[Shape]:
    """The shapes the options name, overrides applied, at ``transactions`` each."""
    names = args.shape or (sorted(MATRIX, key=list(MATRIX).index) if args.matrix else ["base"])
    changes = {
        field: getattr(args, option)
        for option, field in _OVERRIDES.items()
        if getattr(args, option) is not None
    }
    shapes = []
    for name in names:
        shape = MATRIX[name].resized(transactions)
        if changes:
            shape = replace(shape, name=f"{name}*", **changes)
        shapes.append(shape)
    return shapes
