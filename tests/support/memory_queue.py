"""An in-memory :class:`~shared.storage.ports.Queue` for listener tests, counting its calls.

It keeps the port's semantics that the listener relies on: a queue must be created before
use (``ResourceNotFoundError`` otherwise, as Azure answers 404), a receive hides messages
for the visibility timeout and bumps their dequeue count, every receive and visibility
update issues a fresh pop receipt, and a stale receipt makes delete/update fail with
``ResourceNotFoundError``. ``calls`` counts every operation, as a billed request would be.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from azure.core.exceptions import ResourceNotFoundError

from shared.storage.ports import (
    MAX_MESSAGES_PER_RECEIVE,
    MAX_QUEUE_MESSAGE_BYTES,
    MessageTooLargeError,
    QueueMessage,
)


@dataclass
class _Stored:
    id: str
    content: str
    visible_at: float
    inserted_on: datetime
    dequeue_count: int = 0
    pop_receipt: str = ""


class MemoryQueue:
    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._messages: dict[str, _Stored] = {}
        self._exists = False
        self.calls: Counter[str] = Counter()

    @property
    def name(self) -> str:
        return self._name

    def requests(self) -> int:
        """Every call so far (each would be a billed storage transaction)."""
        with self._lock:
            return sum(self.calls.values())

    def create(self) -> None:
        with self._lock:
            self.calls["create"] += 1
            self._exists = True

    def delete_queue(self) -> None:
        with self._lock:
            self.calls["delete_queue"] += 1
            self._exists = False
            self._messages.clear()

    def send(self, content: str, *, visibility_timeout: int = 0) -> None:
        if len(content.encode()) > MAX_QUEUE_MESSAGE_BYTES:
            raise MessageTooLargeError(f"{len(content.encode())} bytes")
        with self._lock:
            self._count("send")
            message_id = uuid.uuid4().hex
            self._messages[message_id] = _Stored(
                message_id, content, time.monotonic() + visibility_timeout, datetime.now(UTC)
            )

    def receive(
        self, max_messages: int = MAX_MESSAGES_PER_RECEIVE, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        if not 1 <= max_messages <= MAX_MESSAGES_PER_RECEIVE:
            raise ValueError("max_messages must be 1..32")
        if visibility_timeout < 1:
            raise ValueError("a receive hides messages for at least 1 s (Azure's minimum)")
        with self._lock:
            self._count("receive")
            now = time.monotonic()
            taken = [m for m in self._messages.values() if m.visible_at <= now][:max_messages]
            for stored in taken:
                stored.visible_at = now + visibility_timeout
                stored.dequeue_count += 1
                stored.pop_receipt = uuid.uuid4().hex
            return [self._as_message(stored) for stored in taken]

    def delete(self, message: QueueMessage) -> None:
        with self._lock:
            self._count("delete")
            self._current(message)
            del self._messages[message.id]

    def update_visibility(self, message: QueueMessage, visibility_timeout: int) -> QueueMessage:
        if visibility_timeout < 0:
            raise ValueError("visibility_timeout must be >= 0")
        with self._lock:
            self._count("update")
            stored = self._current(message)
            stored.visible_at = time.monotonic() + visibility_timeout
            stored.pop_receipt = uuid.uuid4().hex
            return self._as_message(stored)

    def peek(self, max_messages: int = MAX_MESSAGES_PER_RECEIVE) -> list[QueueMessage]:
        with self._lock:
            self._count("peek")
            now = time.monotonic()
            visible = [m for m in self._messages.values() if m.visible_at <= now]
            return [replace(self._as_message(m), pop_receipt="") for m in visible[:max_messages]]

    def approximate_count(self) -> int:
        with self._lock:
            self._count("count")
            return len(self._messages)

    def clear(self) -> None:
        with self._lock:
            self._count("clear")
            self._messages.clear()

    # --- test helpers (not part of the port, not counted) --------------------------------
    def contents(self) -> list[str]:
        """Every message's content, visible or not."""
        with self._lock:
            return [m.content for m in self._messages.values()]

    def dequeue_count_of(self, content: str) -> int:
        with self._lock:
            return next(m.dequeue_count for m in self._messages.values() if m.content == content)

    def _count(self, op: str) -> None:
        self.calls[op] += 1
        if not self._exists:
            raise ResourceNotFoundError(f"queue {self._name} does not exist")

    def _current(self, message: QueueMessage) -> _Stored:
        stored = self._messages.get(message.id)
        if stored is None or stored.pop_receipt != message.pop_receipt:
            raise ResourceNotFoundError(f"message {message.id}: not found or stale pop receipt")
        return stored

    @staticmethod
    def _as_message(stored: _Stored) -> QueueMessage:
        return QueueMessage(
            id=stored.id,
            pop_receipt=stored.pop_receipt,
            content=stored.content,
            dequeue_count=stored.dequeue_count,
            inserted_on=stored.inserted_on,
            next_visible_on=datetime.now(UTC)
            + timedelta(seconds=stored.visible_at - time.monotonic()),
        )


class MemoryQueues:
    """Hands out :class:`MemoryQueue` by name, like a storage account's ``queue(name)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, MemoryQueue] = {}

    def queue(self, name: str) -> MemoryQueue:
        with self._lock:
            return self._queues.setdefault(name, MemoryQueue(name))

    def requests(self) -> int:
        with self._lock:
            queues = list(self._queues.values())
        return sum(queue.requests() for queue in queues)
