"""One fault, one operation, the same outcome on the embedded twin and on the Azure SDK.

Each test scripts the faults of the next attempts and checks what the caller sees and what
storage holds afterwards, on both backends (``conftest.py``). On Azurite the outcome is the
SDK's real retry policy at work, so these tests also prove the table of
:mod:`shared.storage.retries` that the embedded twin acts out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)

from shared.storage.ports import Entity
from tests.faults.conftest import RETRY_TOTAL, FaultyStorage
from tests.faults.scripted import LOST, TIMEOUT, status
from tests.support.names import unique_name


def test_a_lost_send_response_is_retried_and_queues_the_message_twice(
    faulty: FaultyStorage,
) -> None:
    queue = faulty.account.queue(unique_name("q"))
    queue.create()
    faulty.plan.next(LOST)
    queue.send("once")
    assert faulty.plan.attempts == 2
    assert [m.content for m in queue.peek()] == ["once", "once"]
    queue.delete_queue()


def test_a_lost_delete_response_reads_as_not_found_though_the_message_is_gone(
    faulty: FaultyStorage,
) -> None:
    queue = faulty.account.queue(unique_name("q"))
    queue.create()
    queue.send("work")
    [message] = queue.receive(1, visibility_timeout=30)
    faulty.plan.next(LOST)
    with pytest.raises(ResourceNotFoundError):
        queue.delete(message)
    assert queue.peek() == []
    assert queue.approximate_count() == 0
    queue.delete_queue()


def test_a_lost_visibility_update_loses_the_lease(faulty: FaultyStorage) -> None:
    queue = faulty.account.queue(unique_name("q"))
    queue.create()
    queue.send("work")
    [message] = queue.receive(1, visibility_timeout=30)
    faulty.plan.next(LOST)
    with pytest.raises(ResourceNotFoundError):
        queue.update_visibility(message, 60)
    with pytest.raises(ResourceNotFoundError):
        queue.delete(message)  # our receipt is stale: the update applied
    queue.delete_queue()


def test_a_lost_receive_hides_the_first_messages_and_returns_the_next(
    faulty: FaultyStorage,
) -> None:
    queue = faulty.account.queue(unique_name("q"))
    queue.create()
    for text in ("a", "b"):
        queue.send(text)
    faulty.plan.next(LOST)
    received = queue.receive(1, visibility_timeout=30)
    assert [m.content for m in received] == ["b"]
    assert queue.peek() == []  # "a" is hidden, leased to nobody
    queue.delete_queue()


def test_a_lost_create_only_put_reads_as_exists_though_the_blob_is_ours(
    faulty: FaultyStorage,
) -> None:
    container = faulty.account.container(unique_name("c"))
    container.create()
    faulty.plan.next(LOST)
    with pytest.raises(ResourceExistsError):
        container.put("counter", b"ours", create_only=True)
    assert container.get("counter").data == b"ours"


def test_a_lost_conditional_put_reads_as_modified_though_the_write_is_ours(
    faulty: FaultyStorage,
) -> None:
    container = faulty.account.container(unique_name("c"))
    container.create()
    first = container.put("counter", b"1")
    faulty.plan.next(LOST)
    with pytest.raises(ResourceModifiedError):
        container.put("counter", b"2", if_match=first.etag)
    assert container.get("counter").data == b"2"


def test_a_lost_plain_put_and_a_lost_delete_are_safe_to_retry(faulty: FaultyStorage) -> None:
    container = faulty.account.container(unique_name("c"))
    container.create()
    faulty.plan.next(LOST)
    container.put("blob", b"data")
    assert container.get("blob").data == b"data"
    faulty.plan.next(LOST)
    container.delete("blob")
    with pytest.raises(ResourceNotFoundError):
        container.head("blob")


def test_a_block_staged_from_a_file_is_sent_whole_again_after_a_lost_response(
    faulty: FaultyStorage, tmp_path: Path
) -> None:
    container = faulty.account.container(unique_name("c"))
    container.create()
    block = tmp_path / "block"
    block.write_bytes(b"0123456789" * 10_000)
    with block.open("rb") as data:
        faulty.plan.next(LOST)
        container.stage_block("upload", "0000", data)
    assert faulty.plan.attempts == 2
    container.commit_blocks("upload", ["0000"])
    assert container.get("upload").data == block.read_bytes()


def test_a_lost_insert_response_is_not_retried_and_the_entity_exists(
    faulty: FaultyStorage,
) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    faulty.plan.next(LOST)
    with pytest.raises(ServiceResponseError):
        table.insert(Entity("p", "r", {"n": 1}))
    assert faulty.plan.attempts == 1
    assert table.get("p", "r").properties["n"] == 1
    with pytest.raises(ResourceExistsError):
        table.insert(Entity("p", "r", {"n": 1}))  # what a blind retry by the caller meets


def test_a_timed_out_insert_is_not_retried_and_not_applied(faulty: FaultyStorage) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    faulty.plan.next(TIMEOUT)
    with pytest.raises(ServiceRequestError):
        table.insert(Entity("p", "r", {"n": 1}))
    assert faulty.plan.attempts == 1
    with pytest.raises(ResourceNotFoundError):
        table.get("p", "r")


def test_a_lost_merge_update_is_not_retried_and_applied(faulty: FaultyStorage) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    stored = table.insert(Entity("p", "r", {"status": "accepting"}))
    faulty.plan.next(LOST)
    with pytest.raises(ServiceResponseError):
        table.update(Entity("p", "r", {"status": "accepted"}), if_match=stored.etag)
    assert faulty.plan.attempts == 1
    assert table.get("p", "r").properties["status"] == "accepted"


def test_a_lost_replace_update_is_retried_and_reads_as_modified(faulty: FaultyStorage) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    stored = table.insert(Entity("p", "r", {"status": "accepting"}))
    faulty.plan.next(LOST)
    with pytest.raises(ResourceModifiedError):
        table.update(Entity("p", "r", {"status": "accepted"}), if_match=stored.etag, merge=False)
    assert table.get("p", "r").properties["status"] == "accepted"


def test_a_lost_upsert_and_a_lost_delete_of_an_entity_are_safe(faulty: FaultyStorage) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    faulty.plan.next(LOST)
    table.upsert(Entity("p", "r", {"n": 2}))
    assert table.get("p", "r").properties["n"] == 2
    faulty.plan.next(LOST)
    table.delete("p", "r")
    with pytest.raises(ResourceNotFoundError):
        table.get("p", "r")


@pytest.mark.parametrize("code", [500, 503])
def test_server_errors_are_retried_for_every_method(faulty: FaultyStorage, code: int) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    faulty.plan.next(status(code))
    table.insert(Entity("p", "r", {"n": 1}))  # a POST, yet retried on 500/503
    assert faulty.plan.attempts == 2
    queue = faulty.account.queue(unique_name("q"))
    queue.create()
    faulty.plan.next(status(code), status(code))
    queue.send("x")
    assert faulty.plan.attempts == 3
    assert len(queue.peek()) == 1
    queue.delete_queue()


def test_a_throttled_table_write_is_not_retried_but_a_read_is(faulty: FaultyStorage) -> None:
    table = faulty.account.table(unique_name("t"))
    table.create()
    faulty.plan.next(status(429))
    with pytest.raises(HttpResponseError) as raised:
        table.insert(Entity("p", "r", {"n": 1}))
    assert raised.value.status_code == 429
    with pytest.raises(ResourceNotFoundError):
        table.get("p", "r")
    table.insert(Entity("p", "r", {"n": 1}))
    faulty.plan.next(status(429))
    assert table.get("p", "r").properties["n"] == 1
    assert faulty.plan.attempts == 2


def test_blob_and_queue_services_throttle_with_server_busy_which_is_retried(
    faulty: FaultyStorage,
) -> None:
    container = faulty.account.container(unique_name("c"))
    container.create()
    container.put("b", b"x")
    faulty.plan.next(status(429))
    assert container.get("b").data == b"x"
    assert faulty.plan.attempts == 2


def test_the_sdk_gives_up_after_its_retries_with_the_last_status(faulty: FaultyStorage) -> None:
    container = faulty.account.container(unique_name("c"))
    container.create()
    faulty.plan.next(*[status(503)] * (RETRY_TOTAL + 1))
    with pytest.raises(HttpResponseError) as raised:
        container.put("b", b"x")
    assert raised.value.status_code == 503
    assert faulty.plan.attempts == RETRY_TOTAL + 1
    with pytest.raises(ResourceNotFoundError):
        container.head("b")
