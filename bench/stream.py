"""A stream of batches against one batch of the same size: what the pipeline overlaps.

    python -m bench.stream [--quick] [--transactions N] [--batches K] [--pairs N]

On one batch the pipeline's two serial stages run one after the other: the initiator
validates the whole file before the 202 (a rejected batch must leave no trace), and only
then do the processors rate and the controller reduce it (on SQLite, one writer). Billing
runs as a stream of batches, and there the initiator takes the next batch while the
processors and the controller work on the ones it accepted, so the stages overlap.

This runs, alternately and ``--pairs`` times, ``billing demo``'s pipeline (initiator,
processors, controller as processes, embedded backend + SQLite) with one batch of
``--transactions`` and with ``--batches`` batches of a ``--batches``-th of it each,
POSTed one after the other, and prints every run, the medians and their ratio, with the
lean one-process loop over the same number of rows for scale. Medians, because one run of
this machine moves by ±15 %.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.bare_pipeline import run_lean_loop
from bench.deployment import batch_file
from bench.end_to_end import DEMO_CUSTOMERS, DEMO_SEED
from bench.report import Cell, Report, base_parser
from billing.demo.scenario import run_demo, run_stream


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("a stream of batches against one batch of the same size")
    parser.add_argument("--transactions", type=int, default=None, help="in all, per run")
    parser.add_argument("--batches", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=None)
    args = parser.parse_args(argv)
    transactions: int = args.transactions or (8_000 if args.quick else 500_000)
    batches: int = args.batches or (2 if args.quick else 5)
    pairs: int = args.pairs or (1 if args.quick else 3)
    processes = os.cpu_count() or 1
    each = transactions // batches
    report = Report(benchmark="stream", quick=args.quick)

    single: list[float] = []
    stream: list[float] = []
    intake: list[float] = []
    for pair in range(pairs):
        print(f"  pair {pair + 1} of {pairs}: one batch of {transactions:,}", file=sys.stderr)
        one = run_demo(transactions=each * batches, processes=processes)
        if not one.reconciled:
            raise RuntimeError(f"the batch did not reconcile: {one.status}")
        single.append(one.seconds)
        print(f"  pair {pair + 1} of {pairs}: {batches} batches of {each:,}", file=sys.stderr)
        many = run_stream(batches=batches, transactions=each, processes=processes)
        if not many.reconciled:
            raise RuntimeError(f"a batch of the stream did not reconcile: {many.statuses}")
        stream.append(many.seconds)
        intake.append(sum(many.intake_seconds))
    print("  lean loop", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="billing-stream-") as folder:
        data = batch_file(each * batches, seed=DEMO_SEED, customers=DEMO_CUSTOMERS)
        lean_seconds = run_lean_loop(data, Path(folder) / "lean.sqlite3")

    total = each * batches
    medians = {"one": statistics.median(single), "stream": statistics.median(stream)}
    rows: list[list[Cell]] = [
        [label, " / ".join(f"{s:.2f}" for s in runs), median, total / median, lean_seconds / median]
        for label, runs, median in (
            (f"1 batch of {total:,}", single, medians["one"]),
            (f"{batches} batches of {each:,}, back to back", stream, medians["stream"]),
        )
    ]
    report.table(
        f"{total:,} transactions, {processes} processors, embedded + SQLite; {pairs} alternating "
        f"pairs; the lean loop {total / lean_seconds:,.0f} tx/s",
        ["submitted as", "each run, s", "median s", "median tx/s", "vs lean loop"],
        rows,
    )
    ratio = medians["one"] / medians["stream"]
    intake_share = statistics.median(intake) / medians["stream"]
    report.figure("one.transactions_per_second", total / medians["one"])
    report.figure("stream.transactions_per_second", total / medians["stream"])
    report.figure("stream_over_one", ratio)
    report.figure("stream.intake_share", intake_share)
    report.figure("lean.transactions_per_second", total / lean_seconds)
    report.conclude(
        f"the same {total:,} transactions as {batches} batches back to back run {ratio:.2f}x as "
        f"fast as one batch (median {medians['stream']:.2f} s against {medians['one']:.2f} s); "
        f"the initiator's intakes took {intake_share:.0%} of the stream's time, overlapped with "
        "the rating and reduce of the batches before"
    )
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
