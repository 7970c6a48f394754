"""Poison messages: after too many dequeues, to ``<queue>-poison`` with the last error."""

from __future__ import annotations

import json

import pytest

from shared.listener import UNKNOWN_LAST_ERROR, Lease, PoisonRecord
from shared.storage.ports import QueueMessage
from tests.listener.helpers import (
    ListenerFactory,
    dequeue_elsewhere,
    fast_config,
    make_sources,
    memq,
    wait_until,
)
from tests.support.memory_queue import MemoryQueues


def test_a_message_dequeued_too_often_elsewhere_is_poisoned(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send('{"chunk": 7}')
    dequeue_elsewhere(source.queue, 3)  # three earlier attempts, in "other processes"
    handled: list[str] = []
    poisoned: list[tuple[QueueMessage, str, str]] = []
    listener = listener_factory(
        [source],
        lambda lease: handled.append(lease.content),
        fast_config(max_dequeue_count=3),
        on_poison=lambda message, queue, error: poisoned.append((message, queue, error)),
    )
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().poisoned == 1)

    assert handled == []  # the handler never sees it again
    assert memq(source).contents() == []
    (record_text,) = queues.queue("work-normal-0-poison").contents()
    record = PoisonRecord.model_validate_json(record_text)
    assert record.source_queue == "work-normal-0"
    assert json.loads(record.content) == {"chunk": 7}
    assert record.dequeue_count == 4
    assert record.last_error == UNKNOWN_LAST_ERROR
    ((message, queue_name, error),) = poisoned
    assert (message.content, queue_name, error) == (
        '{"chunk": 7}',
        "work-normal-0",
        UNKNOWN_LAST_ERROR,
    )


def test_the_last_error_seen_here_goes_into_the_record(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("bad payload")

    def handler(lease: Lease) -> None:
        raise ValueError(f"unknown sku in {lease.content!r}")

    listener = listener_factory(
        [source], handler, fast_config(max_dequeue_count=1, visibility_timeout=1)
    )
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().poisoned == 1)
    (record_text,) = queues.queue("work-normal-0-poison").contents()
    record = PoisonRecord.model_validate_json(record_text)
    assert record.last_error == "ValueError: unknown sku in 'bad payload'"
    assert record.dequeue_count == 2
    assert listener.snapshot().errors == 1  # the one failed attempt
    assert memq(source).contents() == []


def test_a_failing_on_poison_leaves_the_message_in_the_work_queue(
    queues: MemoryQueues, listener_factory: ListenerFactory
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("x")
    dequeue_elsewhere(source.queue, 1)

    def on_poison(message: QueueMessage, queue: str, error: str) -> None:
        raise ConnectionError("batch table unreachable")

    listener = listener_factory(
        [source], lambda lease: None, fast_config(max_dequeue_count=1), on_poison=on_poison
    )
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().errors >= 1)
    listener.stop(timeout=2)
    # the batch was not told, so the message stays to be poisoned again on its next dequeue
    assert memq(source).contents() == ["x"]
    assert listener.snapshot().poisoned == 0


@pytest.mark.parametrize("dequeues", [1, 5])
def test_within_the_limit_the_handler_gets_it(
    queues: MemoryQueues, listener_factory: ListenerFactory, dequeues: int
) -> None:
    (source,) = make_sources(queues)
    source.queue.send("ok")
    dequeue_elsewhere(source.queue, dequeues - 1)
    listener = listener_factory([source], lambda lease: None, fast_config(max_dequeue_count=5))
    listener.start(threads=1)
    assert wait_until(lambda: listener.snapshot().handled == 1)
    assert listener.snapshot().poisoned == 0
