"""Fixtures for the listener tests: in-memory queues and listeners that always stop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shared.listener import QueueListener
from tests.listener.helpers import ListenerFactory
from tests.support.memory_queue import MemoryQueues


@pytest.fixture
def queues() -> MemoryQueues:
    return MemoryQueues()


@pytest.fixture
def listener_factory() -> Iterator[ListenerFactory]:
    """Builds listeners and stops every one of them at the end of the test."""
    made: list[QueueListener] = []

    def make(*args: Any, **kwargs: Any) -> QueueListener:
        listener = QueueListener(*args, **kwargs)
        made.append(listener)
        return listener

    yield make
    for listener in made:
        listener.stop(timeout=5)
