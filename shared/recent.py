"""A bounded, thread-safe memory of the most recently used keys (and their values).

A process that runs for months must not keep one entry per batch or per message it ever
saw: what it remembers to save a round trip (a batch's warehouse row exists, the ETag of a
record, a message's last error) is worth keeping only while that batch or message is
recent. :class:`Recent` holds at most ``capacity`` entries; using or setting one makes it
the newest, and the oldest goes first. Forgetting is always safe for its users: they ask
storage again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most ``capacity`` entries, least recently used out first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if key in self._entries:
                self._entries.move_to_end(key)
            return value

    def pop(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
