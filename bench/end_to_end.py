"""End-to-end throughput against the bare single-process pipeline, and the hot path's requests.

    python -m bench.end_to_end [--quick] [--transactions N] [--processes N]
                               [--backend embedded|azurite]
    python -m bench.end_to_end --matrix [--rounds N] [--backend azurite [--storage-latency-ms 0 10]]

With ``--matrix``, ``--shape`` (and the shape overrides) or ``--storage-latency-ms`` it runs
the shape matrix of :mod:`bench.matrix` instead: the roles on each generated shape, one line
per shape (and latency), beside the lean loop on the same rows and pricebook (and the Celery
setup on Azurite), ``--rounds`` rounds alternating which runs first. Without them, as below.

Three measurements on the same generated batch (``billing demo``'s: CSV, 500 customers,
random seed 7), in one run:

* **end to end**: :func:`billing.demo.scenario.run_demo` starts initiator, processors (one
  process per core) and controller as processes on ``--backend`` (embedded by default;
  ``azurite`` starts an Azurite of its own) and times ``POST /batches`` → batch
  ``completed`` (reconciled, or the benchmark fails), counting every storage request the
  roles made meanwhile, start-up, idle loops and the status polls included;
* **bare**: :mod:`bench.bare_pipeline`, parse + rate + insert in one loop in this process;
* **lean**: :func:`bench.bare_pipeline.run_lean_loop`, ``csv.reader`` + integer rating +
  bulk insert, no validation: what the file costs Python at all;
* **hot path**: :mod:`bench.hot_path`, storage requests per 1,000 transactions by role, on
  the same backend.

End to end and the hot path each run twice: with the roles' garbage-collector settings
(:mod:`shared.gc_tuning`) and with Python's own (``BILLING_GC_YOUNG_THRESHOLD=0``).

The ratio end-to-end / bare says what distribution costs (or, with more cores, gains) on
this machine: queues, blobs, a trigger, JSON and compression on every chunk, three roles sharing
the cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.bare_pipeline import BareTimings, run_bare_pipeline, run_lean_loop
from bench.deployment import BACKENDS, Backend, batch_file, open_deployment
from bench.hot_path import HotPath, count_hot_path
from bench.matrix_options import add_rounds_option, add_shape_options, shapes_from, wants_shapes
from bench.report import Cell, Report, base_parser
from billing.demo.scenario import DemoResult, run_demo
from shared import meter
from shared.settings import Settings

DEMO_SEED = 7
DEMO_CUSTOMERS = 500


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("end-to-end throughput vs the bare pipeline; hot-path requests")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--processes", type=int, default=None, help="default: one per core")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded")
    add_rounds_option(parser)
    add_shape_options(parser)
    args = parser.parse_args(argv)
    if wants_shapes(args):
        return run_shapes(args)
    if args.rounds is not None:
        parser.error("--rounds applies to the shape matrix (--matrix, --shape)")
    backend: Backend = args.backend
    transactions: int = args.transactions or (4_000 if args.quick else 100_000)
    processes: int = args.processes or os.cpu_count() or 1
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    report = Report(benchmark="end_to_end", quick=args.quick)

    print(f"  demo: {transactions:,} transactions, {processes} processors", file=sys.stderr)
    demo = run_demo(transactions=transactions, processes=processes, backend=backend)
    print("  demo again, Python's garbage-collector settings", file=sys.stderr)
    untuned = run_demo(
        transactions=transactions,
        processes=processes,
        backend=backend,
        environment={"BILLING_GC_YOUNG_THRESHOLD": "0"},
    )
    for run in (demo, untuned):
        if not run.reconciled:
            raise RuntimeError(f"the demo batch did not reconcile: {run.status}")
    print("  bare pipeline", file=sys.stderr)
    data = batch_file(transactions, seed=DEMO_SEED, customers=DEMO_CUSTOMERS)
    with tempfile.TemporaryDirectory(prefix="billing-bare-") as folder:
        bare = run_bare_pipeline(
            data,
            Path(folder) / "warehouse.sqlite3",
            chunk_size=defaults.chunk_size,
            max_chunk_size=defaults.max_chunk_size,
        )
        print("  lean loop", file=sys.stderr)
        lean_seconds = run_lean_loop(data, Path(folder) / "lean.sqlite3")
    print("  hot path, role by role", file=sys.stderr)
    with open_deployment(backend) as deployment:
        hot = count_hot_path(deployment, transactions)
    with open_deployment(backend, gc_young_threshold=0) as deployment:
        hot_untuned = count_hot_path(deployment, transactions)
    if not (hot.reconciled and hot_untuned.reconciled):
        raise RuntimeError("the hot-path batch did not reconcile")

    add_throughput(report, demo, bare, lean_seconds, processes, backend)
    add_hot_path(report, hot)
    add_collector(report, demo, untuned, hot, hot_untuned)
    report.emit(args.json)
    return 0


def run_shapes(args: argparse.Namespace) -> int:
    """The shape matrix (:mod:`bench.matrix`): this project beside the lean loop on the same
    rows, and on Azurite beside the Celery setup too when its extra is installed."""
    from bench.celery_reference import MATRIX_TRANSACTIONS
    from bench.matrix import add_matrix, celery_available, run_matrix

    transactions: int = args.transactions or (2_000 if args.quick else MATRIX_TRANSACTIONS)
    with_celery = args.backend == "azurite" and celery_available()
    if args.backend == "azurite" and not with_celery:
        print("  Celery is not installed (pip install -e '.[bench]'): no ratio", file=sys.stderr)
    report = Report(benchmark="end_to_end", quick=args.quick)
    runs = run_matrix(
        shapes_from(args, transactions),
        args.storage_latency_ms or [0.0],
        backend=args.backend,
        with_celery=with_celery,
        rounds=args.rounds or 1,
        processes=args.processes or 2,
    )
    add_matrix(report, runs, backend=args.backend)
    report.emit(args.json)
    return 0


def add_throughput(
    report: Report,
    demo: DemoResult,
    bare: BareTimings,
    lean_seconds: float,
    processes: int,
    backend: Backend,
) -> None:
    ratio = demo.throughput / bare.throughput
    lean = demo.transactions / lean_seconds
    requests = meter.total(demo.storage_requests) * 1000 / demo.transactions
    report.table(
        f"{demo.transactions:,} transactions, same file; end to end on {backend} + SQLite",
        [
            "pipeline",
            "seconds",
            "transactions/s",
            "ratio vs bare",
            "ratio vs lean",
            "requests per 1,000 tx",
        ],
        [
            [
                f"end to end: POST → completed ({processes} processors, 4+ processes)",
                demo.seconds,
                demo.throughput,
                ratio,
                demo.throughput / lean,
                requests,
            ],
            [
                "  of which intake: POST → 202 (validated, queued)",
                demo.intake_seconds,
                "",
                "",
                "",
                "",
            ],
            [
                "  of which after the 202: rate, reduce, close",
                demo.seconds - demo.intake_seconds,
                "",
                "",
                "",
                "",
            ],
            [
                "bare: parse + rate + insert, one loop, one process (no storage)",
                bare.total,
                bare.throughput,
                1.0,
                bare.throughput / lean,
                "",
            ],
            ["  of which parse (validating, streaming)", bare.parse, "", "", "", ""],
            ["  of which rate", bare.rate, "", "", "", ""],
            ["  of which insert (SQLite, one transaction per chunk)", bare.insert, "", "", "", ""],
            [
                "lean: csv.reader + integer rating + bulk insert, no validation",
                lean_seconds,
                lean,
                lean / bare.throughput,
                1.0,
                "",
            ],
        ],
    )
    report.figure("end_to_end.transactions_per_second", demo.throughput)
    report.figure("end_to_end.requests_per_1000", requests)
    report.figure("end_to_end.intake_seconds", demo.intake_seconds)
    report.figure("bare.transactions_per_second", bare.throughput)
    report.figure("end_to_end_over_bare", ratio)
    report.figure("end_to_end_over_lean", demo.throughput / lean)
    report.conclude(
        f"end to end runs at {ratio:.2f}x the bare single-process loop "
        f"({demo.throughput:,.0f} vs {bare.throughput:,.0f} transactions/s), "
        f"{demo.throughput / lean:.2f}x the lean loop ({lean:,.0f} transactions/s)"
    )


def add_hot_path(report: Report, hot: HotPath) -> None:
    rows: list[list[Cell]] = [
        [
            role,
            meter.total(counts),
            hot.per_thousand(role),
            meter.total(counts) / hot.chunks,
            hot.cpu_us_per_transaction(role),
            ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())),
        ]
        for role, counts in hot.requests.items()
    ]
    total = sum(meter.total(counts) for counts in hot.requests.values())
    rows.append(["all roles", total, hot.per_thousand(), total / hot.chunks, "", ""])
    report.table(
        f"hot path: {hot.transactions:,} transactions in {hot.chunks} chunks, role by role",
        ["role", "requests", "per 1,000 transactions", "per chunk", "CPU µs per tx", "kinds"],
        rows,
    )
    for role in hot.requests:
        report.figure(f"hot_path.{role}.requests_per_1000", hot.per_thousand(role))
        report.figure(f"hot_path.{role}.cpu_us_per_transaction", hot.cpu_us_per_transaction(role))
    report.figure("hot_path.requests_per_1000", hot.per_thousand())
    by_kind: Counter[str] = Counter()
    for counts in hot.requests.values():
        by_kind.update(counts)
    for kind, count in sorted(by_kind.items()):  # what `billing cost` prices, class by class
        report.figure(f"hot_path.kind.{kind}.requests_per_1000", count * 1000 / hot.transactions)
    report.conclude(
        f"the hot path costs {hot.per_thousand():.1f} storage requests per 1,000 transactions "
        f"({total / hot.chunks:.1f} per chunk of {hot.transactions // hot.chunks:,})"
    )


def add_collector(
    report: Report, demo: DemoResult, untuned: DemoResult, hot: HotPath, hot_untuned: HotPath
) -> None:
    """The roles' garbage-collector settings against Python's, in the same run."""

    def intake_cpu(run: DemoResult) -> float:
        return run.intake_cpu_seconds * 1e6 / run.transactions

    rows: list[list[Cell]] = [
        [
            "end to end, transactions/s",
            untuned.throughput,
            demo.throughput,
            demo.throughput / untuned.throughput,
        ],
        [
            "  of which intake (POST → 202), seconds",
            untuned.intake_seconds,
            demo.intake_seconds,
            demo.intake_seconds / untuned.intake_seconds,
        ],
        [
            "  the initiator process's CPU µs per tx over it",
            intake_cpu(untuned),
            intake_cpu(demo),
            intake_cpu(demo) / intake_cpu(untuned),
        ],
    ]
    for role in hot.cpu_seconds:
        before, after = hot_untuned.cpu_us_per_transaction(role), hot.cpu_us_per_transaction(role)
        rows.append([f"hot path, {role}: CPU µs per tx", before, after, after / before])
        report.figure(f"hot_path.{role}.cpu_us_per_transaction_python_gc", before)
    report.figure("end_to_end.initiator_cpu_us_per_transaction", intake_cpu(demo))
    report.figure("end_to_end_python_gc.initiator_cpu_us_per_transaction", intake_cpu(untuned))
    report.table(
        "garbage collector: Python's settings against the roles' (shared.gc_tuning)",
        ["measure", "Python's", "the roles'", "ratio"],
        rows,
    )
    report.figure("end_to_end_python_gc.transactions_per_second", untuned.throughput)
    report.figure("end_to_end_over_python_gc", demo.throughput / untuned.throughput)
    report.conclude(
        f"the roles' garbage-collector settings run end to end at "
        f"{demo.throughput / untuned.throughput:.2f}x Python's"
    )


if __name__ == "__main__":
    raise SystemExit(main())
