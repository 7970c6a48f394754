"""What an idle processor instance costs: storage requests and trigger-bus receive calls per idle
hour, five ways side by side.

    python -m bench.idle [--quick] [--backend embedded|azurite] [--window SECONDS]

Every storage request is billed (a 1 s poll of one queue is 79,200 requests in 22 idle
hours). Four variants run at the same time, each in its own process on empty queues
(every priority x partition: 12 work queues with the defaults), and the meter counts their
requests:

``naive``         the listener with a fixed 1 s poll and no back-off (``min = max = 1 s``)
``backoff``       the default back-off, no trigger: one thread stays, polling at the cap
``trigger``       back-off + push trigger: threads retire to zero, only the safety poll
``per_priority_1s`` back-off + trigger as the processor subscribed before: a subscription
                  per priority (3), each receiving for 1 s at a time
``processor``     a whole :class:`~processor.worker.ProcessorWorker` with the trigger: one
                  subscription for all its priorities, receiving for 60 s at a time, plus
                  its heartbeat and release-gate poll (the real deployment)

Storage requests are billed per request, and on Service Bus so is every receive call, however
long it waited: the bus column counts receive calls (on the embedded bus, which counts its
receives as Service Bus would bill them: one per call).

The defaults' intervals are 30 s (back-off cap) and 60 s (safety poll, gate poll, idle
heartbeat, trigger receive), too long to watch for an hour. So every interval except the
two 1 s ones (the naive poll, the old receive) is divided by a **time scale** (30 by
default); the requests counted in the window, after a warm-up long enough for the back-off to
reach its cap, are multiplied back by that scale. Since every idle request is paced by one of
those intervals, the extrapolation is exact up to the requests' own latency (about 1 ms
against intervals of 1 s and more). The formula for the real defaults is printed next to the
measurement.
"""

from __future__ import annotations

import hashlib
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
from processor.subscriptions import INSTANCE_SUBSCRIPTION_IDLE_SECONDS
from processor.work_queues import work_sources
from shared import meter
from shared.bus import open_bus
from shared.bus.ports import SubscriptionSpec
from shared.bus.subscriber import RECEIVE_SECONDS, TriggerSubscriber
from shared.contracts.messages import PRIORITY_PROPERTY
from shared.domain.priority import PRIORITIES
from shared.listener import ListenerConfig, QueueListener
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage import open_storage

Variant = Literal["naive", "backoff", "trigger", "per_priority_1s", "processor"]
VARIANTS: tuple[Variant, ...] = ("naive", "backoff", "trigger", "per_priority_1s", "processor")
DESCRIPTIONS: dict[Variant, str] = {
    "naive": "fixed 1 s poll, no back-off",
    "backoff": "back-off, no trigger (1 thread at the cap)",
    "trigger": "back-off + trigger (0 threads + safety poll)",
    "per_priority_1s": "the same, trigger as before: 3 subscriptions, 1 s receives",
    "processor": "processor instance (1 subscription, 60 s receives; heartbeat, gate)",
}
#: How long a receive blocked before: 1 s, "also the longest a stop waits".
BEFORE_RECEIVE_SECONDS = 1.0
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
    scale = args.scale or (60.0 if args.quick else 30.0)
    defaults = ListenerConfig()
    # Warm-up: the back-off ramp to its cap (about twice the cap) plus one cap, scaled.
    warmup = 3 * defaults.backoff_max_idle / scale
    timing = Timing(scale, warmup, args.window or (3.0 if args.quick else 20.0))
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


def scaled_options(variant: Variant, scale: float) -> dict[str, Any]:
    """Listener overrides of one variant: the defaults' intervals divided by ``scale``."""
    defaults = ListenerConfig()
    if variant == "naive":
        return {"backoff_min_idle": 1.0, "backoff_delta": 1.0, "backoff_max_idle": 1.0}
    return {
        "backoff_min_idle": defaults.backoff_min_idle / scale,
        "backoff_delta": defaults.backoff_delta / scale,
        "backoff_max_idle": defaults.backoff_max_idle / scale,
        "safety_poll_seconds": defaults.safety_poll_seconds / scale,
        "empty_recheck_seconds": defaults.empty_recheck_seconds / scale,
    }


def _idle_child(
    variant: Variant,
    settings: Settings,
    timing: Timing,
    barrier: Barrier,
    results: multiprocessing.Queue[tuple[Variant, dict[str, int]]],
) -> None:
    storage = open_storage(settings)
    bus = open_bus(settings)
    options = scaled_options(variant, timing.scale)
    stops: list[Any] = []
    if variant == "processor":
        from processor.worker import ProcessorWorker

        worker = ProcessorWorker(
            settings,
            storage,
            bus,
            heartbeat_busy_seconds=10.0 / timing.scale,
            heartbeat_idle_seconds=60.0 / timing.scale,
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
            trigger_available=variant in ("trigger", "per_priority_1s"),
        )
        barrier.wait(timeout=120)
        if variant == "per_priority_1s":
            subscriber = TriggerSubscriber(
                bus,
                specs_before(f"idle-bench-{variant}"),
                on_work=lambda _event: listener.on_work_detected(),
                on_gate=lambda _event: None,
                receive_seconds=BEFORE_RECEIVE_SECONDS,
            )
            subscriber.start()
            stops.append(subscriber.stop)
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


def specs_before(instance_id: str) -> list[SubscriptionSpec]:
    """The processor's trigger subscriptions before they became one: one per priority."""
    digest = hashlib.sha256(instance_id.encode()).hexdigest()[:16]
    return [
        SubscriptionSpec(
            name=f"proc-{p}-{digest}",
            rules=({PRIORITY_PROPERTY: p},),
            auto_delete_idle_seconds=INSTANCE_SUBSCRIPTION_IDLE_SECONDS,
        )
        for p in PRIORITIES
    ]


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
    expected = expected_per_hour(queues)
    expected_bus = expected_receives_per_hour()
    per_hour: dict[Variant, float] = {}
    bus_per_hour: dict[Variant, float] = {}
    rows: list[list[Cell]] = []
    for variant in VARIANTS:
        storage = {k: v for k, v in counts[variant].items() if not k.startswith("bus.")}
        scale = 1.0 if variant == "naive" else timing.scale
        per_hour[variant] = meter.total(storage) * HOUR / (timing.window * scale)
        # The old 1 s receive is not scaled; the processor's 60 s one is.
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
    before, after = bus_per_hour["per_priority_1s"], bus_per_hour["processor"]
    report.figure("bus_receives_before_over_after", before / after if after else 0.0)
    report.conclude(
        f"naive polling costs {naive / max(per_hour['backoff'], 1):.0f}x the back-off and "
        f"{naive / max(per_hour['trigger'], 1):.0f}x back-off + trigger "
        f"({naive * 22 / queues:,.0f} requests per queue in 22 idle hours)"
    )
    report.conclude(
        f"trigger receive calls (billed per call on Service Bus): {before:,.0f}/h before, "
        f"{after:,.0f}/h now, {before / max(after, 1):.0f}x fewer; 10 idle processors make "
        f"{10 * 24 * after:,.0f} a day instead of {10 * 24 * before:,.0f}"
    )
    report.conclude(
        "formula (defaults): naive = queues x 3,600; back-off = queues x 3,600 / 30 s cap; "
        "trigger = queues x 3,600 / 60 s safety poll (a depth query per queue); the processor "
        "adds 60 heartbeat writes and 60 gate reads per hour; bus receives = subscriptions x "
        "3,600 / receive seconds (before 3 x 3,600 / 1 s, now 1 x 3,600 / 60 s)"
    )


def expected_per_hour(queues: int) -> dict[Variant, float]:
    """The defaults' formula: storage requests per idle hour of each variant."""
    defaults = ListenerConfig()
    trigger = queues * HOUR / defaults.safety_poll_seconds
    return {
        "naive": queues * HOUR / 1.0,
        "backoff": queues * HOUR / defaults.backoff_max_idle,
        "trigger": trigger,
        "per_priority_1s": trigger,
        "processor": trigger + HOUR / 60.0 + HOUR / defaults.safety_poll_seconds,
    }


def expected_receives_per_hour() -> dict[Variant, float]:
    """The formula for trigger-bus receive calls per idle hour (variants with a trigger)."""
    return {
        "per_priority_1s": len(PRIORITIES) * HOUR / BEFORE_RECEIVE_SECONDS,
        "processor": HOUR / RECEIVE_SECONDS,
    }


def _kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(Counter(counts).items())) or "none"


if __name__ == "__main__":
    raise SystemExit(main())
