"""A storage account that notes when a receive first returns work (for latency benchmarks).

Wrapping the account a processor is given, rather than its handler, times the moment the
production code really dequeued the item — whatever wiring sits between the trigger and the
receive — without touching that code.
"""

from __future__ import annotations

import threading
import time

from shared.storage.ports import BlobContainer, Queue, QueueMessage, StorageAccount, Table


class DequeueClock:
    """``arm()``, then ``wait()`` for the ``perf_counter`` of the next receive that found work."""

    def __init__(self) -> None:
        self._seen = threading.Event()
        self._lock = threading.Lock()
        self._at = 0.0

    def arm(self) -> None:
        with self._lock:
            self._seen.clear()

    def mark(self) -> None:
        now = time.perf_counter()
        with self._lock:
            if not self._seen.is_set():
                self._at = now
                self._seen.set()

    def wait(self, timeout: float) -> float:
        if not self._seen.wait(timeout):
            raise TimeoutError(f"no work item was dequeued within {timeout:.0f} s")
        with self._lock:
            return self._at


class TimedQueue:
    """A :class:`~shared.storage.ports.Queue` whose non-empty receives mark the clock."""

    def __init__(self, queue: Queue, clock: DequeueClock) -> None:
        self._queue = queue
        self._clock = clock

    @property
    def name(self) -> str:
        return self._queue.name

    def create(self) -> None:
        self._queue.create()

    def delete_queue(self) -> None:
        self._queue.delete_queue()

    def send(self, content: str, *, visibility_timeout: int = 0) -> None:
        self._queue.send(content, visibility_timeout=visibility_timeout)

    def receive(self, max_messages: int = 32, visibility_timeout: int = 30) -> list[QueueMessage]:
        messages = self._queue.receive(max_messages, visibility_timeout)
        if messages:
            self._clock.mark()
        return messages

    def delete(self, message: QueueMessage) -> None:
        self._queue.delete(message)

    def update_visibility(self, message: QueueMessage, visibility_timeout: int) -> QueueMessage:
        return self._queue.update_visibility(message, visibility_timeout)

    def peek(self, max_messages: int = 32) -> list[QueueMessage]:
        return self._queue.peek(max_messages)

    def approximate_count(self) -> int:
        return self._queue.approximate_count()

    def clear(self) -> None:
        self._queue.clear()


class TimedStorage:
    """``storage`` with the queues named in ``timed`` wrapped in :class:`TimedQueue`."""

    def __init__(self, storage: StorageAccount, timed: set[str], clock: DequeueClock) -> None:
        self._storage = storage
        self._timed = timed
        self._clock = clock

    @property
    def account_name(self) -> str:
        return self._storage.account_name

    def queue(self, name: str) -> Queue:
        queue = self._storage.queue(name)
        return TimedQueue(queue, self._clock) if name in self._timed else queue

    def container(self, name: str) -> BlobContainer:
        return self._storage.container(name)

    def table(self, name: str) -> Table:
        return self._storage.table(name)

    def list_queues(self) -> list[str]:
        return self._storage.list_queues()

    def list_containers(self) -> list[str]:
        return self._storage.list_containers()

    def list_tables(self) -> list[str]:
        return self._storage.list_tables()

    def close(self) -> None:
        self._storage.close()
