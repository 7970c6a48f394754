"""The listener's counters and snapshot."""

from __future__ import annotations

import threading

from shared.listener import ListenerState
from shared.listener.state import LATENCY_WINDOW


def test_snapshot_reports_counters_and_depths() -> None:
    state = ListenerState()
    state.set_depths({"work-high-0": 3, "work-low-0": 5})
    state.thread_started()
    state.thread_started()
    state.thread_ended(retired=True)
    state.received(3)
    state.finished(latency_seconds=0.010)
    state.finished(error=True)
    state.poisoned()
    state.finished()
    state.renewed()

    snap = state.snapshot()
    assert snap.queue_depths == {"work-high-0": 3, "work-low-0": 5}
    assert snap.queue_depth == 8
    assert (snap.active_threads, snap.total_threads, snap.retired_threads) == (1, 2, 1)
    assert (snap.in_flight, snap.handled, snap.errors, snap.poisoned) == (0, 1, 1, 1)
    assert snap.renewals == 1
    assert snap.last_latency_ms == 10.0


def test_p95_is_the_nearest_rank_of_recent_latencies() -> None:
    state = ListenerState()
    assert state.snapshot().p95_latency_ms is None
    for ms in range(1, 101):  # 1..100 ms, shuffled order does not matter
        state.received(1)
        state.finished(latency_seconds=((ms * 37) % 100 + 1) / 1000)
    snap = state.snapshot()
    assert snap.p95_latency_ms == 95.0
    assert snap.handled == 100


def test_latency_window_is_bounded_and_follows_the_current_load() -> None:
    state = ListenerState()
    for _ in range(LATENCY_WINDOW):
        state.received(1)
        state.finished(latency_seconds=1.0)  # an old slow phase
    for _ in range(LATENCY_WINDOW):
        state.received(1)
        state.finished(latency_seconds=0.002)  # the current fast phase
    assert state.snapshot().p95_latency_ms == 2.0


def test_counters_are_thread_safe() -> None:
    state = ListenerState()

    def work() -> None:
        for _ in range(2000):
            state.received(1)
            state.finished(latency_seconds=0.001)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snap = state.snapshot()
    assert (snap.handled, snap.in_flight) == (8000, 0)


def test_threads_that_start_and_retire_between_two_takes_still_show_in_the_peak() -> None:
    state = ListenerState()
    state.thread_started()
    state.thread_started()
    state.thread_started()
    state.thread_ended(retired=True)
    state.thread_ended(retired=True)
    state.thread_started()
    state.thread_ended(retired=False)
    state.thread_ended(retired=True)  # a burst of three at once, all gone again

    snap = state.snapshot()
    assert (snap.active_threads, snap.peak_active_threads) == (0, 3)
    assert state.snapshot().peak_active_threads == 3  # reading a snapshot does not reset it
    assert state.take_peak_active() == 3
    # Taking it starts a new peak from the threads running now.
    assert state.take_peak_active() == 0
    assert state.snapshot().peak_active_threads == 0
    state.thread_started()
    assert state.take_peak_active() == 1
    assert state.take_peak_active() == 1  # still running: the next interval's peak is 1
    state.thread_ended(retired=True)
    assert state.take_peak_active() == 1
    assert state.take_peak_active() == 0
