"""The release gate in the processor, on the embedded backend.

Held processors make no queue request; a release wakes every one of them (printed latency,
bounded by the issue's 100 ms); a processor started after the release works at once; a
hold pauses them again; without the broadcast the slow poll of the flag still releases.
"""

from __future__ import annotations

import time

from processor.worker import ProcessorWorker
from shared import meter
from shared.coordination.gate import set_gate
from tests.processor.conftest import WorkerStarter
from tests.processor.deployment import Deployment, Row, wait_until
from tests.processor.reference import TIE_BOOK

WAKE_BOUND_SECONDS = 0.1
CHUNKS: list[list[Row]] = [[("alice", "TIE", 5, "EU")], [("bob", "HALF", 1, "EU")]]


def queue_requests_during(seconds: float) -> int:
    before = meter.snapshot()
    time.sleep(seconds)
    return meter.total(meter.diff(meter.snapshot(), before), prefix="queue.")


def seconds_until_receiving(workers: list[ProcessorWorker], since: float) -> float | None:
    """Poll every millisecond until each worker has started a dequeue thread."""
    while time.perf_counter() - since < 5:
        if all(w.snapshot().listener.total_threads >= 1 for w in workers):
            return time.perf_counter() - since
        time.sleep(0.001)
    return None


def test_held_processors_wait_then_a_release_wakes_them_all_and_a_late_one_starts_at_once(
    deployment: Deployment, start_worker: WorkerStarter
) -> None:
    control = deployment.storage.container(deployment.settings.control_container)
    set_gate(control, deployment.bus, released=False)
    version = deployment.upload_pricebook(TIE_BOOK)
    held = [start_worker(deployment) for _ in range(2)]
    deployment.publish(CHUNKS, pricebook_version=version)  # its trigger arrives too

    assert queue_requests_during(0.5) == 0
    for worker in held:
        snapshot = worker.snapshot()
        assert not snapshot.released
        assert (snapshot.listener.total_threads, snapshot.listener.handled) == (0, 0)
    assert deployment.work_depth() == len(CHUNKS)

    begin = time.perf_counter()
    set_gate(control, deployment.bus, released=True)  # the flag, then the broadcast
    latency = seconds_until_receiving(held, since=begin)
    assert latency is not None, "not every held processor was released"
    print(f"release → every held processor receiving: {latency * 1000:.1f} ms")
    assert latency < WAKE_BOUND_SECONDS
    assert wait_until(lambda: len(deployment.results()) == len(CHUNKS))

    late = start_worker(deployment)
    snapshot = late.snapshot()
    assert snapshot.released
    assert snapshot.listener.total_threads >= 1  # started within start(): no wait


def test_a_hold_pauses_running_processors_until_the_next_release(
    deployment: Deployment, start_worker: WorkerStarter
) -> None:
    control = deployment.storage.container(deployment.settings.control_container)
    version = deployment.upload_pricebook(TIE_BOOK)
    workers = [start_worker(deployment) for _ in range(2)]
    assert all(w.snapshot().released for w in workers)

    set_gate(control, deployment.bus, released=False)
    assert wait_until(lambda: all(w.snapshot().paused for w in workers))
    # A receive already under way when the hold arrived may still complete: then quiet.
    assert wait_until(lambda: queue_requests_during(0.5) == 0)
    deployment.publish(CHUNKS, pricebook_version=version)
    assert queue_requests_during(0.5) == 0
    assert deployment.results() == []

    set_gate(control, deployment.bus, released=True)
    assert wait_until(lambda: len(deployment.results()) == len(CHUNKS))
    assert not any(w.snapshot().paused for w in workers)


def test_without_the_broadcast_the_work_signal_makes_the_flag_be_reread(
    deployment: Deployment, start_worker: WorkerStarter
) -> None:
    control = deployment.storage.container(deployment.settings.control_container)
    set_gate(control, None, released=False)
    version = deployment.upload_pricebook(TIE_BOOK)
    worker = start_worker(deployment, safety_poll_seconds=0.3)
    deployment.publish(CHUNKS, pricebook_version=version)
    time.sleep(1.0)  # the batch's own move of the work signal is seen, the gate still held
    assert not worker.snapshot().released

    set_gate(control, None, released=True)  # the flag only: the broadcast is "lost"

    assert wait_until(lambda: len(deployment.results()) == len(CHUNKS))
    assert worker.snapshot().released
