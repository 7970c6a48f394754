"""A trigger wakes a dequeue thread asleep in its back-off; it does not wait the sleep out."""

from __future__ import annotations

import threading
import time

from shared.listener.wake import WakeSignal
from tests.listener.helpers import ListenerFactory, fast_config, make_sources, wait_until
from tests.support.memory_queue import MemoryQueues


def test_work_detected_wakes_a_thread_sleeping_in_its_back_off(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    handled: list[float] = []
    # One thread, and after its first empty receive it sleeps at least 20 s.
    config = fast_config(
        backoff_min_idle=20.0, backoff_max_idle=30.0, scaling_rule="0:1", max_threads=1
    )
    listener = listener_factory([source], lambda lease: handled.append(time.monotonic()), config)
    listener.start(threads=1)
    assert wait_until(lambda: source.queue.approximate_count() == 0)
    time.sleep(0.2)  # the thread has found the queue empty and gone to sleep

    source.queue.send("work")
    triggered = time.monotonic()
    assert listener.on_work_detected() == 0  # the rule wants no extra thread…
    assert wait_until(lambda: handled, timeout=5)  # …yet the sleeping one takes the work
    print(f"woken thread handled the message {1000 * (handled[0] - triggered):.1f} ms after")
    assert listener.snapshot().total_threads == 1


def test_a_sleep_ends_on_wake_and_not_on_an_earlier_wake() -> None:
    signal = WakeSignal()
    signal.wake()  # before the sleep: must not end it
    started = time.monotonic()
    assert signal.sleep(0.05) is False
    assert time.monotonic() - started >= 0.04

    timer = threading.Timer(0.05, signal.wake)
    timer.start()
    assert signal.sleep(10) is True
    timer.join()
