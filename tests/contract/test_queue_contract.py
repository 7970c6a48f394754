"""The queue contract: visibility, pop receipts, dequeue counts, batch and size limits."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from shared.storage.ports import (
    MAX_MESSAGES_PER_RECEIVE,
    MAX_QUEUE_MESSAGE_BYTES,
    MessageTooLargeError,
    Queue,
    QueueMessage,
    StorageAccount,
)
from tests.support.names import unique_name

#: How long to wait for a hidden message to come back before calling it lost.
REAPPEAR_DEADLINE_SECONDS = 15.0


def receive_when_visible(
    queue: Queue, until: Callable[[list[QueueMessage]], bool] = bool
) -> list[QueueMessage]:
    """Poll until a receive returns what ``until`` accepts (the clock of the backend decides)."""
    deadline = time.monotonic() + REAPPEAR_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        received = queue.receive(visibility_timeout=30)
        if until(received):
            return received
        time.sleep(0.2)
    raise AssertionError(f"no message became visible within {REAPPEAR_DEADLINE_SECONDS} s")


def test_received_message_is_hidden_then_redelivered_with_a_higher_dequeue_count(
    queue: Queue,
) -> None:
    queue.send('{"n": 1}')

    [first] = queue.receive(visibility_timeout=2)
    assert (first.content, first.dequeue_count) == ('{"n": 1}', 1)
    assert queue.receive() == []  # hidden while its visibility timeout runs

    [again] = receive_when_visible(queue)
    assert (again.id, again.content, again.dequeue_count) == (first.id, first.content, 2)
    assert again.pop_receipt != first.pop_receipt


def test_a_stale_pop_receipt_is_rejected_after_redelivery(queue: Queue) -> None:
    queue.send("work")
    [first] = queue.receive(visibility_timeout=1)
    [again] = receive_when_visible(queue)

    with pytest.raises(ResourceNotFoundError):
        queue.delete(first)
    queue.delete(again)
    assert queue.approximate_count() == 0


def test_a_stale_pop_receipt_is_rejected_after_update_visibility(queue: Queue) -> None:
    queue.send("work")
    [received] = queue.receive(visibility_timeout=30)

    extended = queue.update_visibility(received, 60)

    assert (extended.id, extended.content) == (received.id, received.content)
    assert extended.pop_receipt != received.pop_receipt
    with pytest.raises(ResourceNotFoundError):
        queue.delete(received)
    with pytest.raises(ResourceNotFoundError):
        queue.update_visibility(received, 60)
    assert queue.receive() == []  # still hidden: the failed calls changed nothing
    queue.delete(extended)
    assert queue.approximate_count() == 0


def test_update_visibility_to_zero_releases_the_message_at_once(queue: Queue) -> None:
    queue.send("work")
    [received] = queue.receive(visibility_timeout=30)

    queue.update_visibility(received, 0)

    [again] = receive_when_visible(queue)
    assert (again.id, again.dequeue_count) == (received.id, 2)


def test_a_deleted_message_is_gone_and_deleting_it_again_is_not_found(queue: Queue) -> None:
    queue.send("work")
    [received] = queue.receive()
    queue.delete(received)

    assert queue.peek() == []
    with pytest.raises(ResourceNotFoundError):
        queue.delete(received)


def test_a_message_sent_with_a_visibility_timeout_appears_later(queue: Queue) -> None:
    queue.send("later", visibility_timeout=2)

    assert queue.receive() == []
    [received] = receive_when_visible(queue)
    assert (received.content, received.dequeue_count) == ("later", 1)


def test_receives_at_most_32_per_call_page_by_page(queue: Queue) -> None:
    sent = {f'{{"n": {n}}}' for n in range(70)}
    for content in sent:
        queue.send(content)

    pages = [queue.receive(MAX_MESSAGES_PER_RECEIVE, visibility_timeout=60) for _ in range(4)]

    assert [len(page) for page in pages] == [32, 32, 6, 0]
    received = [message for page in pages for message in page]
    assert {message.content for message in received} == sent
    assert len({message.id for message in received}) == 70


@pytest.mark.parametrize("max_messages", [0, MAX_MESSAGES_PER_RECEIVE + 1])
def test_a_batch_size_outside_1_to_32_is_refused(queue: Queue, max_messages: int) -> None:
    with pytest.raises(ValueError, match="max_messages"):
        queue.receive(max_messages)


def test_a_message_of_exactly_64_kib_is_accepted_and_one_byte_more_is_not(queue: Queue) -> None:
    # XML-special characters count once each: the limit is on the text, not its escaping.
    exactly = ('<&>"' * (MAX_QUEUE_MESSAGE_BYTES // 4 - 1)).ljust(MAX_QUEUE_MESSAGE_BYTES, "x")
    assert len(exactly.encode("utf-8")) == MAX_QUEUE_MESSAGE_BYTES

    queue.send(exactly)
    with pytest.raises(MessageTooLargeError):
        queue.send(exactly + "x")

    [received] = queue.receive()
    assert received.content == exactly
    assert queue.approximate_count() == 1


def test_the_limit_counts_utf8_bytes_not_characters(queue: Queue) -> None:
    # 1,000 two-byte characters, then one-byte ones up to exactly 64 KiB: 64,536 characters.
    # The two-byte ones are few and first because Azurite (3.35) decodes a request body read
    # by read (``res += chunk.toString()``), so a character split between two socket reads
    # arrives as two U+FFFD and the text grows past the limit: 32,768 "é" were refused now
    # and then on a loaded machine. Azure reads the body whole; the first read holds these.
    exactly = ("é" * 1000).ljust(MAX_QUEUE_MESSAGE_BYTES - 1000, "x")
    assert len(exactly.encode("utf-8")) == MAX_QUEUE_MESSAGE_BYTES

    queue.send(exactly)
    with pytest.raises(MessageTooLargeError):  # 64,537 characters are 65,538 bytes
        queue.send(exactly + "é")

    assert [m.content for m in queue.receive()] == [exactly]


@pytest.mark.parametrize("character", ["\x00", "\x01", "\ufffe", "\ud800"])
def test_a_character_xml_cannot_carry_is_refused(queue: Queue, character: str) -> None:
    with pytest.raises(HttpResponseError) as refused:
        queue.send(f'{{"note": "a{character}b"}}')

    assert refused.value.status_code == 400
    assert queue.approximate_count() == 0


def test_a_visibility_timeout_below_one_second_is_refused_on_receive(queue: Queue) -> None:
    queue.send("m")

    with pytest.raises(HttpResponseError) as refused:
        queue.receive(visibility_timeout=0)

    assert refused.value.status_code == 400
    assert [m.content for m in queue.peek()] == ["m"]


def test_a_missing_queue_is_not_found(storage: StorageAccount) -> None:
    missing = storage.queue(unique_name("q"))

    with pytest.raises(ResourceNotFoundError):
        missing.send("m")
    with pytest.raises(ResourceNotFoundError):
        missing.receive()
    with pytest.raises(ResourceNotFoundError):
        missing.approximate_count()


def test_peek_does_not_hide_nor_count_a_dequeue(queue: Queue) -> None:
    for n in range(3):
        queue.send(f"m{n}")

    peeked = queue.peek()
    assert sorted(m.content for m in peeked) == ["m0", "m1", "m2"]
    assert {m.dequeue_count for m in peeked} == {0}

    received = queue.receive(visibility_timeout=30)
    assert {m.id for m in received} == {m.id for m in peeked}
    assert {m.dequeue_count for m in received} == {1}
    assert queue.peek() == []  # now hidden by the receive, not by the peek


def test_approximate_count_includes_hidden_messages_until_deleted(queue: Queue) -> None:
    for n in range(5):
        queue.send(f"m{n}")
    assert queue.approximate_count() == 5

    received = queue.receive(2, visibility_timeout=30)
    assert queue.approximate_count() == 5

    for message in received:
        queue.delete(message)
    assert queue.approximate_count() == 3


def test_clear_removes_every_message(queue: Queue) -> None:
    for n in range(3):
        queue.send(f"m{n}")
    queue.receive(1)

    queue.clear()

    assert queue.approximate_count() == 0
    assert queue.peek() == []
