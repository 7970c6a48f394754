"""What the empty-queue back-off saves: processor requests per 1,000 transactions.

    python -m bench.empty_receives [--quick] [--backend embedded|azurite] [--transactions N]

One batch is accepted through the production intake (normal priority, so of the twelve work
queues — three priorities by four partitions — only the normal ones ever hold work). Its work
items are then drained by the production listener + rating step in two processes (as
``bench.hot_path`` drains them, threads from the default scaling rule) while they arrive
one every ``--interval`` seconds, as intake cuts and sends them while a batch is in flight
(no trigger: the listener finds them by receiving). Each pass drains them once per
variant, in alternating order:

* **fixed**: a queue found empty is skipped for ``empty_recheck_seconds`` (0.1 s) and then
  asked again, however often it was empty before — every round of a busy thread pays an
  empty receive on each empty queue whose 0.1 s has run out;
* **growing** (the default): a queue empty ``n`` times in a row is left out of the next
  ``2**(n-1)`` rounds (and ``0.1 * 2**(n-1)`` seconds), never longer than
  ``empty_recheck_max_seconds`` (``shared.listener.empty_memory``).

Printed: receives (``queue.get``) and all processor requests per 1,000 transactions, and
the ratio growing / fixed, best (fewest requests) of the passes for each variant.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence

from bench.deployment import BACKENDS, Backend, Deployment, open_deployment
from bench.drain import CapturedItem, DrainResult, capture_work_items, drain, enqueue
from bench.report import Cell, Report, base_parser
from shared import meter
from shared.listener import ListenerConfig
from shared.listener_settings import listener_config

PROCESSES = 2


def variants() -> dict[str, dict[str, float]]:
    """Listener overrides of each variant."""
    defaults = ListenerConfig()
    return {
        "fixed": {"empty_recheck_max_seconds": defaults.empty_recheck_seconds},
        "growing": {},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0] if __doc__ else "empty_receives")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--passes", type=int, default=None, help="runs of each variant (2)")
    parser.add_argument(
        "--interval", type=float, default=0.5, help="seconds between two work items arriving"
    )
    args = parser.parse_args(argv)
    backend: Backend = args.backend
    transactions: int = args.transactions or (8_000 if args.quick else 200_000)
    passes: int = args.passes or (1 if args.quick else 2)
    report = Report(benchmark="empty_receives", quick=args.quick)
    results = measure(backend, transactions, passes, args.interval)
    rows: list[list[Cell]] = []
    for name, result in results.items():
        receives = result.requests.get("queue.get", 0) * 1000 / transactions
        total = meter.total(result.requests) * 1000 / transactions
        rows.append([name, result.items, receives, total, result.items_per_second])
        report.figure(f"{name}.receives_per_1000_tx", receives)
        report.figure(f"{name}.requests_per_1000_tx", total)
    report.table(
        f"{backend}: {transactions:,} transactions arriving one item per {args.interval} s, "
        f"{PROCESSES} processes, processor only",
        ["variant", "work items", "receives/1,000 tx", "requests/1,000 tx", "items/s"],
        rows,
    )
    fixed, growing = (meter.total(results[v].requests) for v in ("fixed", "growing"))
    ratio = growing / fixed
    report.figure("requests_growing_vs_fixed", ratio)
    report.conclude(
        f"the growing back-off makes {ratio:.2f}x the processor requests of the fixed one"
    )
    report.emit(args.json)
    return 0


def measure(
    backend: Backend, transactions: int, passes: int, interval: float
) -> dict[str, DrainResult]:
    """The drain with the fewest requests of each variant over ``passes`` alternating passes."""
    best: dict[str, DrainResult] = {}
    with open_deployment(backend) as deployment:
        record = deployment.accept_batch(transactions)
        captured = capture_work_items(deployment)
        threads = listener_config(deployment.settings).rule.optimal_threads(len(captured))
        names = list(variants())
        for index in range(passes):
            # fixed, growing, growing, fixed, …: a drift in the machine's load hits both alike
            for name in names if index % 2 == 0 else reversed(names):
                enqueue(deployment, captured[:1])
                feeder = threading.Thread(
                    target=trickle, args=(deployment, captured[1:], interval), daemon=True
                )
                feeder.start()
                result = drain(
                    deployment.settings,
                    threads=threads,
                    items=len(captured),
                    processes=PROCESSES,
                    **variants()[name],
                )
                feeder.join()
                print(
                    f"  {name}: {meter.total(result.requests)} requests for {record.chunks} items",
                    file=sys.stderr,
                )
                if name not in best or meter.total(result.requests) < meter.total(
                    best[name].requests
                ):
                    best[name] = result
    return best


def trickle(deployment: Deployment, items: list[CapturedItem], interval: float) -> None:
    """Send ``items`` to their queues one every ``interval`` seconds."""
    for name, text in items:
        time.sleep(interval)
        deployment.storage.queue(name).send(text)


if __name__ == "__main__":
    raise SystemExit(main())
