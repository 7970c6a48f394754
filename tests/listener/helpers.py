"""Helpers for the listener tests: fast settings, waiting, created queues."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from shared.domain.priority import Priority
from shared.listener import ListenerConfig, QueueListener, QueueSource
from shared.listener.source import poison_queue
from shared.storage.ports import Queue
from tests.support.memory_queue import MemoryQueue, MemoryQueues

#: Short times so each test takes well under a few seconds; the formulas do not care.
FAST: dict[str, Any] = {
    "visibility_timeout": 2,
    "backoff_min_idle": 0.01,
    "backoff_delta": 0.01,
    "backoff_max_idle": 0.08,
    "safety_poll_seconds": 0.3,
    "empty_recheck_seconds": 0.0,
}


def fast_config(**overrides: Any) -> ListenerConfig:
    return ListenerConfig(**{**FAST, **overrides})


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` passes; the test asserts the result."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def make_sources(
    queues: MemoryQueues,
    priorities: Sequence[Priority] = ("normal",),
    partitions: int = 1,
) -> list[QueueSource]:
    """Created work queues (their poison queues are left for the listener to create)."""
    sources = []
    for priority in priorities:
        for partition in range(partitions):
            name = f"work-{priority}-{partition}"
            queue = queues.queue(name)
            queue.create()
            sources.append(
                QueueSource(queue, queues.queue(poison_queue(name)), priority, partition)
            )
    return sources


#: ``listener_factory(...)`` takes the arguments of :class:`QueueListener`.
ListenerFactory = Callable[..., QueueListener]


def memq(source: QueueSource) -> MemoryQueue:
    """The test double behind ``source``, with its call counts and helpers."""
    assert isinstance(source.queue, MemoryQueue)
    return source.queue


def dequeue_elsewhere(queue: Queue, times: int) -> None:
    """Receive the queue's first message ``times`` times and hand it straight back, as
    consumers in other processes that failed on it would have (its dequeue count rises)."""
    for _ in range(times):
        (message,) = queue.receive(1, visibility_timeout=30)
        queue.update_visibility(message, 0)
