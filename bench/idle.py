"""What an idle processor instance costs: storage requests and trigger-bus receive calls per idle
hour, four ways side by side.

    python -m bench.idle [--quick] [--backend embedded|azurite] [--window SECONDS]

Every storage request is billed (a 1 s poll of one queue is 79,200 requests in 22 idle
hours). The variants run at the same time, each in its own process on empty queues
(every priority x partition: 12 work queues with the defaults), and the meter counts their
requests:

``naive``         the listener with a fixed 1 s poll and no back-off (``min = max = 1 s``)
``backoff``       the default back-off, no trigger: one thread stays, polling at the cap
``trigger``       back-off + push trigger: threads retire to zero, only the safety poll
``processor``     a whole :class:`~processor.worker.ProcessorWorker` with the defaults: one
                  subscription, 60 s receives; the work signal's ETag read each 120 s tick
                  (the gate only when it moved), every queue's depth once an hour, a
                  heartbeat each 5 minutes (the real deployment)

Storage requests are billed per request, and on Service Bus so is every receive call, however
long it waited: the bus column counts receive calls (on the embedded bus, which counts its
receives as Service Bus would bill them: one per call).

The defaults' intervals run from 30 s (back-off cap) to an hour (the processor's full look at
its queues), too long to watch. So every interval except the naive poll's 1 s is divided
by a **time scale** (120 by default, so that the 30 s window is one idle hour and holds the
hourly look); the requests counted in the window, after a
warm-up long enough for the back-off to reach its cap, are multiplied back by that scale.
Since every idle request is paced by one of those intervals, the extrapolation is exact up to
the requests' own latency (about 1 ms against intervals of 0.25 s and more). The formula for
the real defaults is printed next to the measurement.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from typing import Any, Literal

from bench.deployment import BACKENDS, Backend, open_deployment
from bench.report import Cell, Report, base_parser
from processor.work_queues import work_sources
from shared import meter
from shared.bus import open_bus
from shared.bus.subscriber import RECEIVE_SECONDS
from shared.listener import (
    HEARTBEAT_IDLE_SECONDS,
    ListenerConfig,
    QueueListener,
)
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage import open_storage

Variant = Literal["naive", "backoff", "trigger", "processor"]
VARIANTS: tuple[Variant, ...] = (
    "naive",
    "backoff",
    "trigger",
    "processor",
)
DESCRIPTIONS: dict[Variant, str] = {
    "naive": "fixed 1 s poll, no back-off",
    "backoff": "back-off, no trigger (1 thread at the cap)",
    "trigger": "back-off + trigger (0 threads + 60 s depth scans)",
    "processor": "processor instance: 120 s work-signal HEAD, hourly scan, 5 min beats",
}
#: The trigger variant's safety tick: a depth query of every queue each time.
TRIGGER_SAFETY_POLL_SECONDS = 60.0
HOUR = 3600.0


@dataclass(frozen=True)
class Timing:
    """Where the window sits, in real (scaled-down) seconds."""

    scale: float
    warmup: float
    window: float


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("storage requests per idle hour per processor instance")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded")
    parser.add_argument("--window", type=float, default=None, help="measured seconds")
    parser.add_argument("--scale", type=float, default=None, help="time scale of intervals")
    args = parser.parse_args(argv)
    scale = args.scale or (240.0 if args.quick else 120.0)
    defaults = ListenerConfig()
    # Warm-up, scaled: the back-off ramp to its cap (about twice the cap) plus one cap, and one
    # safety tick, so that the window's hour holds the hourly look whatever the tick's phase.
    # On Azurite a round of receives over 12 queues takes real time too: at least 10 s.
    tick = float(Settings.model_fields["safety_poll_seconds"].default)
    warmup = (3 * defaults.backoff_max_idle + tick) / scale
    if args.backend == "azurite":
        warmup = max(warmup, 10.0)
    # By default one idle hour: the processor's hourly look at its queues falls inside.
    timing = Timing(scale, warmup, args.window or (3.0 if args.quick else HOUR / scale))
    report = Report(benchmark="idle", quick=args.quick)
    backend: Backend = args.backend
    with open_deployment(backend) as deployment:
        counts = measure_all(deployment.settings, timing)
        add_results(report, deployment.settings, counts, timing, backend)
    report.emit(args.json)
    return 0


def measure_all(settings: Settings, timing: Timing) -> dict[Variant, dict[str, int]]:
    """Run every variant at once, each in a process; their requests during the window."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(VARIANTS))
    results: multiprocessing.Queue[tuple[Variant, dict[str, int]]] = context.Queue()
    children = [
        context.Process(
            target=_idle_child, args=(variant, settings, timing, barrier, results), daemon=True
        )
        for variant in VARIANTS
    ]
    for child in children:
        child.start()
    print(
        f"  {len(VARIANTS)} variants idle for {timing.warmup + timing.window:.0f} s",
        file=sys.stderr,
    )
    counts: dict[Variant, dict[str, int]] = {}
    try:
        for _ in children:
            variant, diff = results.get(timeout=120 + timing.warmup + timing.window)
            counts[variant] = diff
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.terminate()
    return counts


def scaled_options(variant: Variant, scale: float, settings: Settings) -> dict[str, Any]:
    """Listener overrides of one variant: the defaults' intervals divided by ``scale``."""
    defaults = ListenerConfig()
    if variant == "naive":
        return {"backoff_min_idle": 1.0, "backoff_delta": 1.0, "backoff_max_idle": 1.0}
    options = {
        "backoff_min_idle": defaults.backoff_min_idle / scale,
        "backoff_delta": defaults.backoff_delta / scale,
        "backoff_max_idle": defaults.backoff_max_idle / scale,
        "safety_poll_seconds": TRIGGER_SAFETY_POLL_SECONDS / scale,
        "empty_recheck_seconds": defaults.empty_recheck_seconds / scale,
        "empty_recheck_max_seconds": defaults.empty_recheck_max_seconds / scale,
    }
    if variant == "processor":
        options["safety_poll_seconds"] = settings.safety_poll_seconds / scale
        options["quiet_rescan_seconds"] = settings.quiet_rescan_seconds / scale
    return options


def _idle_child(
    variant: Variant,
    settings: Settings,
    timing: Timing,
    barrier: Barrier,
    results: multiprocessing.Queue[tuple[Variant, dict[str, int]]],
) -> None:
    storage = open_storage(settings)
    bus = open_bus(settings)
    options = scaled_options(variant, timing.scale, settings)
    stops: list[Any] = []
    if variant == "processor":
        from processor.worker import ProcessorWorker

        worker = ProcessorWorker(
            settings,
            storage,
            bus,
            heartbeat_busy_seconds=10.0 / timing.scale,
            heartbeat_idle_seconds=HEARTBEAT_IDLE_SECONDS / timing.scale,
            trigger_receive_seconds=RECEIVE_SECONDS / timing.scale,
            **options,
        )
        barrier.wait(timeout=120)
        worker.start()
        stops.append(worker.stop)
    else:
        config = listener_config(settings, **options)
        listener = QueueListener(
            work_sources(storage, settings),
            _never_called,
            config,
            trigger_available=variant == "trigger",
        )
        barrier.wait(timeout=120)
        listener.start()
        stops.append(listener.stop)
    time.sleep(timing.warmup)
    before = meter.snapshot()
    time.sleep(timing.window)
    counted = meter.diff(meter.snapshot(), before)
    for stop in stops:
        stop(5)
    results.put((variant, counted))
    bus.close()
    storage.close()


def _never_called(_lease: object) -> None:
    raise AssertionError("idle queues hold no message")


def add_results(
    report: Report,
    settings: Settings,
    counts: dict[Variant, dict[str, int]],
    timing: Timing,
    backend: Backend,
) -> None:
    queues = len(settings.all_work_queues())
    expected = expected_per_hour(queues, settings)
    expected_bus = expected_receives_per_hour()
    per_hour: dict[Variant, float] = {}
    bus_per_hour: dict[Variant, float] = {}
    rows: list[list[Cell]] = []
    for variant in VARIANTS:
        storage = {k: v for k, v in counts[variant].items() if not k.startswith("bus.")}
        scale = 1.0 if variant == "naive" else timing.scale
        per_hour[variant] = meter.total(storage) * HOUR / (timing.window * scale)
        bus_scale = timing.scale if variant == "processor" else 1.0
        receives = counts[variant].get("bus.receive", 0)
        bus_per_hour[variant] = receives * HOUR / (timing.window * bus_scale)
        rows.append(
            [
                DESCRIPTIONS[variant],
                per_hour[variant],
                expected[variant],
                bus_per_hour[variant],
                expected_bus.get(variant, 0.0),
                _kinds(storage),
            ]
        )
        report.figure(f"{variant}.requests_per_hour", per_hour[variant])
        report.figure(f"{variant}.bus_receives_per_hour", bus_per_hour[variant])
    report.table(
        f"{backend}: one idle instance, {queues} work queues; window {timing.window:.0f} s at "
        f"time scale {timing.scale:.0f} (= {timing.window * timing.scale / 60:.0f} idle minutes)",
        ["variant", "requests/h", "formula/h", "bus receives/h", "formula/h", "kinds in window"],
        rows,
    )
    naive = per_hour["naive"]
    for variant in ("backoff", "trigger", "processor"):
        ratio = naive / per_hour[variant] if per_hour[variant] else float("inf")
        report.figure(f"naive_over_{variant}", ratio if ratio != float("inf") else 0.0)
    report.conclude(
        f"an idle processor instance: {per_hour['processor']:,.0f} storage requests/h "
        f"(target <= 60), {bus_per_hour['processor']:,.0f} trigger receive calls/h "
        "(billed per call on Service Bus)"
    )
    report.conclude(
        f"naive polling costs {naive / max(per_hour['backoff'], 1):.0f}x the back-off and "
        f"{naive / max(per_hour['trigger'], 1):.0f}x back-off + trigger "
        f"({naive * 22 / queues:,.0f} requests per queue in 22 idle hours)"
    )
    report.conclude(
        "formula (defaults): naive = queues x 3,600; back-off = queues x 3,600 / 30 s cap; "
        "trigger = queues x 3,600 / 60 s safety poll (a depth query per queue); processor = "
        "3,600 / 120 s "
        "(work-signal HEADs) + 3,600 / 300 s (heartbeats) + queues x 1 (the hourly look); "
        "bus receives = subscriptions x 3,600 / receive seconds (1 x 3,600 / 60 s)"
    )


def expected_per_hour(queues: int, settings: Settings) -> dict[Variant, float]:
    """The defaults' formula: storage requests per idle hour of each variant."""
    defaults = ListenerConfig()
    trigger = queues * HOUR / TRIGGER_SAFETY_POLL_SECONDS
    return {
        "naive": queues * HOUR / 1.0,
        "backoff": queues * HOUR / defaults.backoff_max_idle,
        "trigger": trigger,
        "processor": HOUR / settings.safety_poll_seconds
        + HOUR / HEARTBEAT_IDLE_SECONDS
        + queues * HOUR / settings.quiet_rescan_seconds,
    }


def expected_receives_per_hour() -> dict[Variant, float]:
    """The formula for trigger-bus receive calls per idle hour (variants with a trigger)."""
    return {
        "processor": HOUR / RECEIVE_SECONDS,
    }


def _kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(Counter(counts).items())) or "none"


if __name__ == "__main__":
    raise SystemExit(main())
