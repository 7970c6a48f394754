"""What a processor's back-off after a batch costs: its requests from the last chunk rated to
its last dequeue thread retired, idle rounds asking every queue vs the idle rescan.

    python -m bench.idle_tail [--quick] [--backend embedded|azurite] [--transactions N]

One batch is accepted through the production intake (normal priority: of the twelve work
queues only the normal ones ever hold work) and its work items captured. Each pass puts
them back and lets one processor's listener — the production engine with the processor's
settings (``processor.worker.processor_listener_config``) and the real rating step — take
them after a trigger (``on_work_detected``), then back off until its last thread retires:

* **every_round** (``idle_rescan_seconds`` unset, as before): an idle thread's back-off and
  a queue's empty skip double together, so each of its ~9 idle rounds asks all twelve queues;
* **rescan** (the default, 30 s): an idle round asks a queue found empty again only 30 s
  after that answer; a trigger (or a message handed back coming due) brings it back sooner.

The back-off runs 0.1 s doubling to the 30 s cap, about 50 s until the thread retires:
every interval of the listener (back-off, empty skips, rescan) is divided by a **time
scale** (10 by default). The requests counted do not depend on it (each idle request is
paced by one of those intervals, the number of rounds by the doubling), only the seconds
do, which are printed multiplied back. Variants alternate across passes; printed: the
tail's receives and requests per variant (median over the passes) and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.deployment import BACKENDS, Backend, Deployment, open_deployment
from bench.drain import capture_work_items, enqueue
from bench.report import Cell, Report, base_parser
from processor.work_queues import work_sources
from processor.worker import processor_listener_config, rating_step
from shared import meter
from shared.domain.priority import PRIORITIES
from shared.listener import Lease, ListenerConfig, QueueListener

#: A pass that takes longer than this is broken, not slow.
PASS_TIMEOUT_SECONDS = 600.0

VARIANTS: dict[str, dict[str, Any]] = {"every_round": {"idle_rescan_seconds": None}, "rescan": {}}


@dataclass(frozen=True)
class Tail:
    """One pass: requests while the batch was rated, and after it until retirement."""

    batch: dict[str, int]
    tail: dict[str, int]
    tail_seconds: float


def scaled_config(deployment: Deployment, scale: float, **overrides: Any) -> ListenerConfig:
    """The processor's listener settings with every interval divided by ``scale``."""
    config = processor_listener_config(deployment.settings, **overrides)
    intervals = (
        "backoff_min_idle",
        "backoff_delta",
        "backoff_max_idle",
        "safety_poll_seconds",
        "empty_recheck_seconds",
        "empty_recheck_max_seconds",
        "idle_rescan_seconds",
    )
    scaled = {
        name: getattr(config, name) / scale
        for name in intervals
        if getattr(config, name) is not None
    }
    return config.model_copy(update=scaled)


def run_pass(deployment: Deployment, items: list[tuple[str, str]], config: ListenerConfig) -> Tail:
    """Rate ``items`` after a trigger, then wait for the listener to retire its threads."""
    enqueue(deployment, items)
    settings = deployment.settings
    step = rating_step(settings, deployment.storage, "idle-tail")
    handled = threading.Semaphore(0)

    def handle(lease: Lease) -> None:
        step.handle(lease.content)
        handled.release()

    listener = QueueListener(
        work_sources(deployment.storage, settings, PRIORITIES),
        handle,
        config,
        trigger_available=True,
        name="idle-tail",
    )
    started = meter.snapshot()
    listener.start(threads=0)  # retired, as a processor is between batches
    listener.on_work_detected()  # the batch's trigger
    try:
        for _ in items:
            if not handled.acquire(timeout=PASS_TIMEOUT_SECONDS):
                raise TimeoutError(f"{len(items)} work items not rated")
        rated = meter.snapshot()
        rated_at = time.perf_counter()
        deadline = rated_at + PASS_TIMEOUT_SECONDS
        while not listener.snapshot().safety_poll_only:
            if time.perf_counter() > deadline:
                raise TimeoutError("the listener did not retire its threads")
            time.sleep(0.005)
        retired_at = time.perf_counter()
        retired = meter.snapshot()
    finally:
        listener.stop(timeout=30)
    return Tail(meter.diff(rated, started), meter.diff(retired, rated), retired_at - rated_at)


def measure(
    backend: Backend, transactions: int, passes: int, scale: float
) -> tuple[int, dict[str, list[Tail]]]:
    tails: dict[str, list[Tail]] = {name: [] for name in VARIANTS}
    with open_deployment(backend) as deployment:
        deployment.accept_batch(transactions)
        items = capture_work_items(deployment)
        names = list(VARIANTS)
        for index in range(passes):
            # every_round, rescan, rescan, every_round, …: drift hits both alike
            for name in names if index % 2 == 0 else reversed(names):
                config = scaled_config(deployment, scale, **VARIANTS[name])
                tail = run_pass(deployment, items, config)
                print(
                    f"  {name}: tail {meter.total(tail.tail)} requests "
                    f"({tail.tail.get('queue.get', 0)} receives) in {tail.tail_seconds:.2f} s",
                    file=sys.stderr,
                )
                tails[name].append(tail)
    return len(items), tails


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0] if __doc__ else "idle_tail")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded")
    parser.add_argument("--transactions", type=int, default=None)
    parser.add_argument("--passes", type=int, default=None, help="runs of each variant (3)")
    parser.add_argument("--scale", type=float, default=10.0, help="time scale (10)")
    args = parser.parse_args(argv)
    backend: Backend = args.backend
    transactions: int = args.transactions or (8_000 if args.quick else 200_000)
    passes: int = args.passes or (1 if args.quick else 3)
    scale: float = args.scale
    report = Report(benchmark="idle_tail", quick=args.quick)
    items, tails = measure(backend, transactions, passes, scale)

    def median(name: str, what: str) -> float:
        values = [
            meter.total(t.tail) if what == "requests" else t.tail.get("queue.get", 0)
            for t in tails[name]
        ]
        return statistics.median(values)

    rows: list[list[Cell]] = []
    for name, passes_of in tails.items():
        batch = statistics.median(meter.total(t.batch) for t in passes_of)
        seconds = statistics.median(t.tail_seconds for t in passes_of) * scale
        receives, requests = median(name, "receives"), median(name, "requests")
        rows.append([name, batch, receives, requests, seconds, requests * 1000 / transactions])
        report.figure(f"{name}.tail_requests", requests)
        report.figure(f"{name}.tail_receives", receives)
    report.table(
        f"{backend}: {transactions:,} transactions in {items} work items, one processor "
        f"listener, intervals / {scale:g} (seconds shown at full scale), median of "
        f"{len(tails['rescan'])}",
        [
            "variant",
            "requests rating the batch",
            "tail receives",
            "tail requests",
            "tail seconds",
            "tail requests/1,000 tx",
        ],
        rows,
    )
    ratio = median("rescan", "requests") / max(median("every_round", "requests"), 1)
    report.figure("tail_requests_rescan_vs_every_round", ratio)
    report.conclude(
        f"after a batch, the idle rescan makes {ratio:.2f}x the requests of idle rounds that "
        "ask every queue"
    )
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
