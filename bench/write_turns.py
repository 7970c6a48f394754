"""The controller's write turns on SQLite, end to end: ``billing demo`` with and without.

    python -m bench.write_turns [--quick] [--transactions N] [--pairs N]

On SQLite a controller's handlers take turns to decode and write a result
(:mod:`controller.write_turns`). On the reduce alone, with every result already waiting,
the gain moves from nothing to a third between runs (``bench.controllers`` prints it);
what the turns are for is the pipeline, where results arrive while two processors rate
and compete for the same cores.
So this runs the whole demo (initiator, processors, controller as processes, embedded
backend + SQLite), alternately with the turns and with ``BILLING_CONTROLLER_WRITE_TURNS=false``,
``--pairs`` times, and prints every run, the medians and their ratio. Medians, because one
run of this machine moves by ±15 %.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Sequence

from bench.report import Cell, Report, base_parser
from billing.demo.scenario import DemoResult, run_demo

WITHOUT_TURNS = {"BILLING_CONTROLLER_WRITE_TURNS": "false"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("end to end with and without the controller's write turns (SQLite)")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=None)
    args = parser.parse_args(argv)
    transactions: int = args.transactions or (4_000 if args.quick else 500_000)
    pairs: int = args.pairs or (1 if args.quick else 5)
    processes = os.cpu_count() or 1
    report = Report(benchmark="write_turns", quick=args.quick)

    runs: dict[str, list[DemoResult]] = {"turns": [], "no turns": []}
    for pair in range(pairs):
        for name, environment in (("turns", None), ("no turns", WITHOUT_TURNS)):
            print(f"  pair {pair + 1} of {pairs}: {name}", file=sys.stderr)
            result = run_demo(
                transactions=transactions, processes=processes, environment=environment
            )
            if not result.reconciled:
                raise RuntimeError(f"the demo batch did not reconcile: {result.status}")
            runs[name].append(result)

    medians = {
        name: statistics.median(r.seconds for r in results) for name, results in runs.items()
    }
    after = {
        name: statistics.median(r.seconds - r.intake_seconds for r in results)
        for name, results in runs.items()
    }
    rows: list[list[Cell]] = [
        [
            name,
            " / ".join(f"{r.seconds:.2f}" for r in results),
            medians[name],
            transactions / medians[name],
            after[name],
        ]
        for name, results in runs.items()
    ]
    report.table(
        f"billing demo, {transactions:,} transactions, {processes} processors, embedded + SQLite; "
        f"{pairs} alternating pairs",
        ["controller handlers", "each run, s", "median s", "median tx/s", "after the 202, s"],
        rows,
    )
    ratio = medians["no turns"] / medians["turns"]
    report.figure("turns.median_seconds", medians["turns"])
    report.figure("no_turns.median_seconds", medians["no turns"])
    report.figure("turns_speedup", ratio)
    report.figure("turns_speedup_after_202", after["no turns"] / after["turns"])
    report.conclude(
        f"with the write turns the demo runs {ratio:.2f}x as fast (median {medians['turns']:.2f} s "
        f"against {medians['no turns']:.2f} s); after the 202, "
        f"{after['no turns'] / after['turns']:.2f}x"
    )
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
