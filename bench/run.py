"""Run the benchmarks, one subprocess each, and sum up their headline figures.

    python -m bench                      # every benchmark, full size
    python -m bench idle scaling --quick # some, small
    billing bench [NAME] [--quick]       # the same from the CLI (in a clone of the repo)

Each benchmark runs as ``python -m bench.<name>`` in its own interpreter, so that meters,
threads and module state never leak from one into the next. The contract of a benchmark
module: ``--quick`` (a run of seconds, used by the smoke test) and ``--json FILE`` (its
:class:`~bench.report.Report` as JSON).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.report import format_cell, load_report

REPO_ROOT = Path(__file__).resolve().parents[1]
#: name → what it measures, in the order they run
BENCHMARKS: dict[str, str] = {
    "intake": "intake throughput vs a plain csv parse; initiator peak RSS on a large batch",
    "upload": "a 1 GB file by upload to storage vs as a POST body: time, initiator peak RSS",
    "scaling": "items/s by dequeue threads per process: justifies BILLING_SCALING_RULE",
    "idle": "storage requests per idle hour per processor instance, four ways",
    "trigger_latency": "batch accepted → first work item dequeued, trigger vs polling",
    "end_to_end": "end-to-end throughput vs the bare pipeline; hot-path requests",
    "rating": "integer rater vs Decimal rater, per transaction and per chunk",
    "charge_load": "plain ORM insert vs the bulk loader of charges, SQLite and PostgreSQL",
    "stream": "a stream of batches back to back against one batch of the same size",
    "celery_reference": "this project vs a plain Celery setup on one Azurite, requests at a proxy",
    "soak": "descriptors, threads and RSS of every role over many batches: flat or leaking",
}
#: Benchmarks that need Azurite whatever their options (the smoke test runs them apart).
NEEDS_AZURITE = frozenset({"celery_reference"})


def available() -> list[str]:
    """The benchmarks whose module is present in this checkout."""
    return [name for name in BENCHMARKS if (REPO_ROOT / "bench" / f"{name}.py").is_file()]


def run(names: Sequence[str], *, quick: bool) -> int:
    """Run ``names`` in turn; 0 if every one succeeded, else 1 (all are run regardless)."""
    failed: list[str] = []
    summaries: list[str] = []
    with tempfile.TemporaryDirectory(prefix="billing-bench-") as folder:
        for name in names:
            json_path = Path(folder) / f"{name}.json"
            command = [sys.executable, "-m", f"bench.{name}", "--json", str(json_path)]
            if quick:
                command.append("--quick")
            print(f"\n=== {name}: {BENCHMARKS[name]}", flush=True)
            code = subprocess.call(command, cwd=REPO_ROOT)
            if code != 0 or not json_path.is_file():
                failed.append(name)
                continue
            figures = load_report(json_path).figures
            shown = ", ".join(f"{k} {format_cell(v)}" for k, v in figures.items())
            summaries.append(f"{name}: {shown}")
    print("\n=== summary" + (" (quick)" if quick else ""))
    for line in summaries:
        print(line)
    if failed:
        print(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help="default: every benchmark")
    parser.add_argument("--quick", action="store_true", help="small runs of a few seconds each")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    present = available()
    if args.list:
        for name, what in BENCHMARKS.items():
            print(f"{name:16} {what}" + ("" if name in present else "  (not in this checkout)"))
        return 0
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(present)}")
    missing = [name for name in args.names if name not in present]
    if missing:
        parser.error(f"benchmark(s) {', '.join(missing)} not in this checkout")
    return run(args.names or present, quick=args.quick)
