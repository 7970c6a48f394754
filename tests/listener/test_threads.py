"""Threads scale up with depth, retire when idle, and a safety poll stays behind."""

from __future__ import annotations

import threading
import time

import pytest

from shared.listener import Lease
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues


def receives_during(queues: MemoryQueues, seconds: float) -> int:
    before = queues.requests()
    time.sleep(seconds)
    return queues.requests() - before


def test_work_detection_scales_to_the_rule_quickly(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "normal"), partitions=2)
    release = threading.Event()
    listener = listener_factory(
        sources,
        lambda lease: release.wait(5),
        fast_config(scaling_rule="0:1,64:2,512:4", max_threads=8, safety_poll_seconds=60),
        trigger_available=True,
    )
    listener.start()
    assert wait_until(lambda: listener.snapshot().safety_poll_only)  # idle: no threads
    for i in range(600):  # depth 600 → the rule says 4 threads
        sources[i % 4].queue.send(f"m{i}")

    started = time.perf_counter()
    added = listener.on_work_detected()  # what a trigger event calls
    elapsed = time.perf_counter() - started
    print(f"on_work_detected scaled 0 → 4 threads in {elapsed * 1000:.1f} ms")

    assert added == 4
    assert listener.snapshot().active_threads == 4
    assert listener.snapshot().queue_depth == 600
    assert elapsed < 0.1  # the latency target, generous for an in-memory queue
    assert listener.on_work_detected() == 0  # a second trigger does not overshoot
    release.set()


def test_threads_never_exceed_the_maximum(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    for i in range(100):
        source.queue.send(f"m{i}")
    release = threading.Event()
    listener = listener_factory(
        [source],
        lambda lease: release.wait(5),
        fast_config(scaling_rule="0:1,10:50", max_threads=3),
    )
    listener.start()
    assert listener.snapshot().active_threads == 3
    release.set()


def test_a_backing_off_thread_that_finds_work_scales_up(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    release = threading.Event()

    def handler(lease: Lease) -> None:
        release.wait(5)

    listener = listener_factory([source], handler, fast_config(scaling_rule="0:1,64:2,512:4"))
    listener.start(threads=1)
    assert wait_until(lambda: memq(source).calls["receive"] >= 3)  # it has been backing off
    for i in range(600):
        source.queue.send(f"m{i}")
    # no trigger: the lone thread finds work after an empty streak and asks for more threads
    assert wait_until(lambda: listener.snapshot().active_threads == 4)
    release.set()
    assert wait_until(lambda: listener.snapshot().handled == 600)


def test_idle_threads_retire_to_one_without_a_trigger(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("normal",), partitions=4)
    config = fast_config(backoff_max_idle=0.2)  # the cap is reached after ~5 empty sweeps
    listener = listener_factory(sources, lambda lease: None, config)
    listener.start(threads=4)
    busy = receives_during(queues, 0.25)  # fresh threads poll at short delays
    assert wait_until(lambda: listener.snapshot().retired_threads == 3)
    assert listener.snapshot().active_threads == 1
    idle = receives_during(queues, 0.6)
    assert listener.snapshot().active_threads == 1  # the last one stays
    print(f"queue requests: {busy} in 0.25 s with 4 threads, {idle} in 0.6 s with one left")
    # one thread at the cap: at most one sweep of the 4 queues per 0.2 s
    assert idle <= 4 * (0.6 / 0.2 + 1)
    assert idle / 0.6 < busy / 0.25 / 4  # the request rate fell by more than 4x
    # and it still works: a message sent now is handled
    sources[2].queue.send("late")
    assert wait_until(lambda: listener.snapshot().handled == 1)


def test_with_a_trigger_every_thread_retires_and_the_safety_poll_finds_work(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "low"), partitions=2)
    listener = listener_factory(
        sources, lambda lease: None, fast_config(safety_poll_seconds=0.3), trigger_available=True
    )
    listener.start(threads=3)
    assert wait_until(lambda: listener.snapshot().active_threads == 0)
    snap = listener.snapshot()
    assert snap.safety_poll_only
    assert snap.retired_threads == 3
    # A trigger that never arrives: the safety poll sees the depth and starts a thread.
    sources[3].queue.send("lost trigger")
    assert wait_until(lambda: listener.snapshot().handled == 1, timeout=3)
    assert sum(memq(source).calls["count"] for source in sources) >= 4


def test_idle_requests_drop_to_zero_when_retired_with_a_trigger(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues, ("high", "normal", "low"), partitions=4)
    listener = listener_factory(
        sources, lambda lease: None, fast_config(safety_poll_seconds=60), trigger_available=True
    )
    listener.start(threads=2)
    busy = receives_during(queues, 0.05)
    assert wait_until(lambda: listener.snapshot().safety_poll_only)
    idle = receives_during(queues, 0.5)
    print(f"queue requests: {busy} in 0.05 s with 2 threads, {idle} in 0.5 s retired")
    assert busy > 0
    assert idle == 0  # the safety poll is due only after 60 s


def test_starting_with_no_thread_needs_a_trigger(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    sources = make_sources(queues)
    with pytest.raises(ValueError, match="trigger"):
        listener_factory(sources, lambda lease: None, fast_config()).start(threads=0)
    held = listener_factory(sources, lambda lease: None, fast_config(), trigger_available=True)
    held.start(threads=0)
    snap = held.snapshot()
    assert (snap.active_threads, snap.safety_poll_only) == (0, True)
    assert queues.requests() == 1  # only the create of the fixture: no poll yet
