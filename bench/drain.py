"""Drain the work queues with the production listener and rating step, and time it.

    items = capture_work_items(deployment)          # what intake left on the queues
    for threads in (1, 2, 4):
        enqueue(deployment, items)
        result = drain(deployment.settings, threads=threads, items=len(items), processes=2)

Each of ``processes`` child processes runs one :class:`~shared.listener.QueueListener` over
every work queue with exactly ``threads`` dequeue threads (the scaling rule is overridden to
``"0:threads"``) and the real :class:`~processor.rating_step.RatingStep` as its handler, as
``billing processor --processes N`` does. The clock starts when every child is ready (a
barrier, so process start-up and imports are not timed) and stops when the last item's
handler returns. Each child reports the storage requests it made (the meter, diffed) and
the CPU time it used: CPU per item barely moves when other work shares the machine, so it
shows the cost of extra threads even when the clock is noisy.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier, Event
from typing import Any

from bench.deployment import Deployment
from processor.work_queues import work_sources
from processor.worker import rating_step
from shared import meter
from shared.domain.priority import PRIORITIES
from shared.gc_tuning import tune_collector
from shared.listener import Lease, QueueListener
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage import open_storage

#: A drain that takes longer than this is broken, not slow.
DRAIN_TIMEOUT_SECONDS = 600.0
#: (queue name, message text) of one work item
CapturedItem = tuple[str, str]


@dataclass(frozen=True)
class DrainResult:
    threads: int
    processes: int
    items: int
    seconds: float
    requests: dict[str, int]
    cpu_seconds: float

    @property
    def items_per_second(self) -> float:
        return self.items / self.seconds

    @property
    def cpu_ms_per_item(self) -> float:
        return self.cpu_seconds * 1000 / self.items

    @property
    def requests_per_item(self) -> float:
        return meter.total(self.requests) / self.items


def capture_work_items(deployment: Deployment) -> list[CapturedItem]:
    """Take every work item off the queues, so that each run can put the same ones back."""
    captured: list[CapturedItem] = []
    for name in deployment.settings.all_work_queues():
        queue = deployment.storage.queue(name)
        while messages := queue.receive(32, 300):
            for message in messages:
                captured.append((name, message.content))
                queue.delete(message)
    return captured


def enqueue(deployment: Deployment, items: list[CapturedItem]) -> None:
    """Put captured items back where intake had put them; empty the output queue."""
    deployment.storage.queue(deployment.settings.output_queue).clear()
    for name, text in items:
        deployment.storage.queue(name).send(text)


def drain(
    settings: Settings,
    *,
    threads: int,
    items: int,
    processes: int = 1,
    **listener_overrides: Any,
) -> DrainResult:
    """Drain ``items`` work items in ``processes`` processes of ``threads`` threads each."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes + 1)
    done = context.Event()
    counter = context.Value("i", 0)
    results: multiprocessing.Queue[tuple[dict[str, int], float]] = context.Queue()
    children = [
        context.Process(
            target=_drain_child,
            args=(settings, threads, items, listener_overrides, barrier, done, counter, results),
            name=f"drain-{index}",
            daemon=True,
        )
        for index in range(processes)
    ]
    for child in children:
        child.start()
    try:
        barrier.wait(timeout=120)
        started = time.perf_counter()
        if not done.wait(DRAIN_TIMEOUT_SECONDS):
            raise TimeoutError(f"{items} items not drained in {DRAIN_TIMEOUT_SECONDS:.0f} s")
        seconds = time.perf_counter() - started
        requests: Counter[str] = Counter()
        cpu_seconds = 0.0
        for _ in children:
            counts, cpu = results.get(timeout=120)
            requests.update(counts)
            cpu_seconds += cpu
    finally:
        for child in children:
            child.join(timeout=30)
            if child.is_alive():
                child.terminate()
    return DrainResult(threads, processes, items, seconds, dict(requests), cpu_seconds)


def _drain_child(
    settings: Settings,
    threads: int,
    total: int,
    listener_overrides: dict[str, Any],
    barrier: Barrier,
    done: Event,
    counter: Any,  # multiprocessing.Value("i"): its type is not exported
    results: multiprocessing.Queue[tuple[dict[str, int], float]],
) -> None:
    storage = open_storage(settings)
    step = rating_step(settings, storage, multiprocessing.current_process().name)

    def handle(lease: Lease) -> None:
        step.handle(lease.content)
        with counter.get_lock():
            counter.value += 1
            if counter.value >= total:
                done.set()

    config = listener_config(
        settings,
        **{"scaling_rule": f"0:{threads}", "max_threads": threads, **listener_overrides},
    )
    listener = QueueListener(work_sources(storage, settings, PRIORITIES), handle, config)
    tune_collector(settings.gc_young_threshold)  # as a processor's worker process does
    barrier.wait(timeout=120)
    before, cpu_before = meter.snapshot(), time.process_time()
    listener.start(threads=threads)
    done.wait(DRAIN_TIMEOUT_SECONDS)
    listener.stop(timeout=30)
    results.put((meter.diff(meter.snapshot(), before), time.process_time() - cpu_before))
    storage.close()
