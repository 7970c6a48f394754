"""Trigger latency: batch accepted → first work item dequeued, with and without the push trigger.

    python -m bench.trigger_latency [--quick] [--samples N] [--cap SECONDS]

Two idle processors run side by side on the embedded backend and bus, and batches of a few
transactions are accepted through the production intake, alternating between them:

``trigger``  a :class:`~processor.worker.ProcessorWorker` serving ``high`` priority, idle at
             **zero** dequeue threads (all retired, safety poll only): the trigger event wakes
             it, the listener queries the depth and starts a thread, which receives.
``polling``  a :class:`~shared.listener.QueueListener` without a trigger serving ``low``, its
             one thread idle **at the back-off cap**: it finds the item on its next poll.

The clock starts when the batch record becomes ``accepted`` (the commit point, just before
the trigger is published) and stops when a receive on the processor's work queues first
returns the item (:mod:`bench.timed_storage`). The polling side's latency is uniform over
its cap, so its median is about cap / 2; it is measured at a short cap (``--cap``, with the
back-off's other times scaled alike) and extrapolated to the default 30 s cap.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.deployment import Deployment, open_deployment
from bench.report import Cell, Report, base_parser
from bench.timed_storage import DequeueClock, TimedStorage
from processor.work_queues import work_sources
from processor.worker import ProcessorWorker, rating_step
from shared.domain.priority import Priority
from shared.listener import ListenerConfig, QueueListener
from shared.listener_settings import listener_config

TRIGGER_PRIORITY: Priority = "high"
POLLING_PRIORITY: Priority = "low"
WAIT_SECONDS = 60.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("batch accepted → first work item dequeued")
    parser.add_argument("--samples", type=int, default=None)
    parser.add_argument("--cap", type=float, default=None, help="polling side's back-off cap")
    args = parser.parse_args(argv)
    samples: int = args.samples or (3 if args.quick else 12)
    cap: float = args.cap or (0.3 if args.quick else 1.0)
    report = Report(benchmark="trigger_latency", quick=args.quick)
    with open_deployment("embedded") as deployment:
        trigger, polling = measure(deployment, samples, cap)
    add_results(report, trigger, polling, cap)
    report.emit(args.json)
    return 0


def measure(deployment: Deployment, samples: int, cap: float) -> tuple[list[float], list[float]]:
    """Latencies in seconds: (trigger path, polling at the cap), ``samples`` of each."""
    settings = deployment.settings
    defaults = ListenerConfig()
    scale = defaults.backoff_max_idle / cap
    backoff: dict[str, Any] = {
        "backoff_min_idle": defaults.backoff_min_idle / scale,
        "backoff_delta": defaults.backoff_delta / scale,
        "backoff_max_idle": cap,
        "empty_recheck_seconds": defaults.empty_recheck_seconds / scale,
        "empty_recheck_max_seconds": defaults.empty_recheck_max_seconds / scale,
    }
    trigger_clock, polling_clock = DequeueClock(), DequeueClock()
    trigger_storage = TimedStorage(
        deployment.storage, set(settings.work_queues(TRIGGER_PRIORITY)), trigger_clock
    )
    polling_storage = TimedStorage(
        deployment.storage, set(settings.work_queues(POLLING_PRIORITY)), polling_clock
    )
    # The worker's back-off only decides how soon it retires to zero threads; the default
    # safety poll (60 s) is left alone, so it never finds the work before the trigger does.
    worker = ProcessorWorker(
        settings, trigger_storage, deployment.bus, priorities=[TRIGGER_PRIORITY], **backoff
    )
    step = rating_step(settings, polling_storage, "polling")
    polling = QueueListener(
        work_sources(polling_storage, settings, [POLLING_PRIORITY]),
        lambda lease: step.handle(lease.content),
        listener_config(settings, **backoff),
        name="polling",
    )
    worker.start()
    polling.start()
    trigger_latencies: list[float] = []
    polling_latencies: list[float] = []
    try:
        for sample in range(samples):
            _wait_idle(worker, polling, cap)
            trigger_latencies.append(_one(deployment, TRIGGER_PRIORITY, trigger_clock, sample))
            polling_latencies.append(_one(deployment, POLLING_PRIORITY, polling_clock, sample))
            print(
                f"  sample {sample + 1}/{samples}: trigger {trigger_latencies[-1] * 1000:.1f} ms, "
                f"polling {polling_latencies[-1] * 1000:.0f} ms",
                file=sys.stderr,
            )
    finally:
        worker.stop(5)
        polling.stop(5)
    return trigger_latencies, polling_latencies


def _wait_idle(worker: ProcessorWorker, polling: QueueListener, cap: float) -> None:
    """Until the worker is at zero threads and the polling thread is back at its cap."""
    # The back-off ramp to the cap lasts about twice the cap; a random extra wait puts the
    # next batch at a random point of the polling thread's sleep.
    time.sleep(3 * cap + random.uniform(0, cap))
    deadline = time.monotonic() + WAIT_SECONDS
    while worker.listener.snapshot().active_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    if worker.listener.snapshot().active_threads:
        raise RuntimeError("the processor's dequeue threads did not retire")
    if polling.snapshot().in_flight:
        raise RuntimeError("the polling listener is still busy")


def _one(deployment: Deployment, priority: Priority, clock: DequeueClock, seed: int) -> float:
    """Accept a tiny batch; the time from its commit point to its first dequeue."""
    accepted_at: list[float] = []

    def note(step: str) -> None:
        if step == "record_accepted":
            accepted_at.append(time.perf_counter())

    clock.arm()
    deployment.accept_batch(5, priority=priority, seed=seed, fault=note)
    return clock.wait(WAIT_SECONDS) - accepted_at[0]


def add_results(report: Report, trigger: list[float], polling: list[float], cap: float) -> None:
    default_cap = ListenerConfig().backoff_max_idle
    trigger_median = statistics.median(trigger)
    polling_median = statistics.median(polling)
    extrapolated = polling_median * default_cap / cap
    rows: list[list[Cell]] = [
        ["trigger (0 threads, woken)", len(trigger), trigger_median * 1000, max(trigger) * 1000],
        [f"polling at a {cap:g} s cap", len(polling), polling_median * 1000, max(polling) * 1000],
        [
            f"polling at the default {default_cap:g} s cap (extrapolated)",
            "",
            extrapolated * 1000,
            "",
        ],
    ]
    report.table(
        "embedded backend and bus: batch accepted → first work item dequeued",
        ["path", "samples", "median ms", "max ms"],
        rows,
    )
    report.figure("trigger.median_ms", trigger_median * 1000)
    report.figure("polling.median_ms", polling_median * 1000)
    report.figure("polling_over_trigger", polling_median / trigger_median)
    report.figure("default_cap_polling_over_trigger", extrapolated / trigger_median)
    report.conclude(
        f"the trigger wakes an instance at zero threads in {trigger_median * 1000:.1f} ms "
        f"(median): {polling_median / trigger_median:.0f}x sooner than polling at a {cap:g} s cap, "
        f"about {extrapolated / trigger_median:,.0f}x sooner than at the default {default_cap:g} s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
