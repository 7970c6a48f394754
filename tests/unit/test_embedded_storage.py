"""The embedded storage account and its queues: what the shared contract suite cannot show.

The contract suite (``tests/contract``) holds the embedded backend to Azurite's behaviour;
these tests cover what only the embedded backend has (a folder that outlives the process,
a clock we can move, names checked before any request) and Azure behaviours too slow or
too rare to exercise on Azurite (messages that never expire, the full range of timeouts).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from shared import meter
from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.embedded import queue as queue_module
from shared.storage.embedded.names import InvalidResourceNameError
from shared.storage.embedded.queue import MESSAGE_TTL_SECONDS, EmbeddedQueue
from shared.storage.ports import MAX_QUEUE_MESSAGE_BYTES, MessageTooLargeError


class FakeClock:
    """Stands in for the queue module's clock, so timeouts pass without sleeping."""

    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(queue_module, "now", fake)
    return fake


@pytest.fixture
def queue(account: EmbeddedStorageAccount) -> EmbeddedQueue:
    created = account.queue("work")
    created.create()
    return created


def test_everything_outlives_the_account_object(tmp_path: Path) -> None:
    first = EmbeddedStorageAccount(tmp_path)
    first.queue("work").create()
    first.queue("work").send("kept")
    first.container("payloads").create()
    first.container("payloads").put("a", b"bytes")
    first.table("Jobs").create()
    first.close()

    second = EmbeddedStorageAccount(tmp_path)
    assert [m.content for m in second.queue("work").receive()] == ["kept"]
    assert second.container("payloads").get("a").data == b"bytes"
    assert second.list_tables() == ["Jobs"]
    second.close()


@pytest.mark.parametrize("name", ["ab", "a" * 64, "Work", "work_q", "-work", "work-", "wo--rk"])
def test_queue_and_container_names_follow_azure_rules(
    account: EmbeddedStorageAccount, name: str
) -> None:
    with pytest.raises(InvalidResourceNameError) as raised:
        account.queue(name)
    # Callers may catch what the SDK raises (HttpResponseError) or a plain ValueError.
    assert isinstance(raised.value, HttpResponseError)
    assert isinstance(raised.value, ValueError)
    with pytest.raises(InvalidResourceNameError):
        account.container(name)


@pytest.mark.parametrize("name", ["abc", "a" * 63, "a-b", "0start", "q1-2-3"])
def test_valid_queue_names_are_accepted(account: EmbeddedStorageAccount, name: str) -> None:
    account.queue(name).create()
    assert name in account.list_queues()


@pytest.mark.parametrize("name", ["ab", "1abc", "has-hyphen", "a" * 64, "tables"])
def test_table_names_follow_azure_rules(account: EmbeddedStorageAccount, name: str) -> None:
    with pytest.raises(InvalidResourceNameError):
        account.table(name)


def test_every_operation_on_a_queue_never_created_is_not_found(
    account: EmbeddedStorageAccount,
) -> None:
    missing = account.queue("never-created")
    calls: list[Callable[[], object]] = [
        lambda: missing.send("x"),
        missing.receive,
        missing.peek,
        missing.approximate_count,
        missing.clear,
    ]
    for call in calls:
        with pytest.raises(ResourceNotFoundError, match="QueueNotFound"):
            call()


def test_delete_queue_takes_its_messages_along(account: EmbeddedStorageAccount) -> None:
    work = account.queue("work")
    work.create()
    work.send("old")
    work.delete_queue()
    assert "work" not in account.list_queues()

    work.create()
    assert work.approximate_count() == 0


def test_queues_do_not_see_each_other(account: EmbeddedStorageAccount) -> None:
    high, low = account.queue("high"), account.queue("low")
    high.create()
    low.create()
    high.send("h")

    assert low.receive() == []
    [message] = high.receive()
    with pytest.raises(ResourceNotFoundError):
        low.delete(message)  # right id and receipt, wrong queue
    high.delete(message)


def test_messages_come_in_order_of_visibility_then_sending(
    queue: EmbeddedQueue, clock: FakeClock
) -> None:
    queue.send("later", visibility_timeout=5)
    for n in range(3):
        queue.send(f"m{n}")
    assert [m.content for m in queue.receive()] == ["m0", "m1", "m2"]

    clock.advance(5)
    assert [m.content for m in queue.receive()] == ["later"]


def test_visibility_timeout_hides_until_it_runs_out(queue: EmbeddedQueue, clock: FakeClock) -> None:
    queue.send("m")
    [first] = queue.receive(visibility_timeout=10)
    assert first.next_visible_on is not None
    assert first.next_visible_on.timestamp() == pytest.approx(clock.t + 10)

    clock.advance(9.9)
    assert queue.receive() == []
    clock.advance(0.1)
    [second] = queue.receive()
    assert (second.id, second.dequeue_count) == (first.id, 2)
    assert second.pop_receipt != first.pop_receipt


def test_a_receipt_stays_valid_after_its_timeout_until_someone_receives_again(
    queue: EmbeddedQueue, clock: FakeClock
) -> None:
    """Azure's rule: the receipt is stale only once the message is received or updated."""
    queue.send("m")
    [message] = queue.receive(visibility_timeout=1)
    clock.advance(60)

    queue.delete(message)
    assert queue.approximate_count() == 0


def test_update_visibility_hides_again_and_keeps_the_dequeue_count(
    queue: EmbeddedQueue, clock: FakeClock
) -> None:
    queue.send("m")
    [message] = queue.receive(visibility_timeout=1)
    updated = queue.update_visibility(message, 30)
    assert (updated.content, updated.dequeue_count) == ("m", 1)

    clock.advance(29)
    assert queue.receive() == []
    clock.advance(1)
    assert [m.dequeue_count for m in queue.receive()] == [2]


def test_messages_never_expire_like_the_azure_backend(
    queue: EmbeddedQueue, clock: FakeClock
) -> None:
    """The Azure backend sends ``time_to_live=-1``; Azure's default would drop it at 7 days."""
    assert math.inf == MESSAGE_TTL_SECONDS
    queue.send("m")
    clock.advance(30 * 24 * 3600)

    assert queue.approximate_count() == 1
    assert [m.content for m in queue.receive()] == ["m"]


@pytest.mark.parametrize("seconds", [-1, 7 * 24 * 3600 + 1])
def test_send_and_update_refuse_timeouts_outside_azure_range(
    queue: EmbeddedQueue, seconds: int
) -> None:
    queue.send("m")
    [message] = queue.receive()
    with pytest.raises(HttpResponseError, match="OutOfRangeQueryParameterValue"):
        queue.send("x", visibility_timeout=seconds)
    with pytest.raises(HttpResponseError, match="OutOfRangeQueryParameterValue"):
        queue.update_visibility(message, seconds)


@pytest.mark.parametrize("seconds", [0, 7 * 24 * 3600 + 1])
def test_receive_refuses_timeouts_outside_azure_range(queue: EmbeddedQueue, seconds: int) -> None:
    """A receive must hide for at least one second (Azure's rule)."""
    with pytest.raises(HttpResponseError, match="OutOfRangeQueryParameterValue"):
        queue.receive(visibility_timeout=seconds)


def test_text_that_xml_cannot_carry_is_refused(queue: EmbeddedQueue) -> None:
    with pytest.raises(HttpResponseError, match="InvalidXmlDocument"):
        queue.send("nul \x00 byte")
    queue.send("tab\tnewline\n and émoji 🎉 are fine")
    assert queue.receive()[0].content == "tab\tnewline\n and émoji 🎉 are fine"


def test_peek_shows_no_receipt_and_no_visibility(queue: EmbeddedQueue) -> None:
    queue.send("m")
    [peeked] = queue.peek()
    assert (peeked.pop_receipt, peeked.next_visible_on, peeked.dequeue_count) == ("", None, 0)
    assert peeked.inserted_on is not None


def test_each_queue_operation_is_metered_once(queue: EmbeddedQueue) -> None:
    before = meter.snapshot()
    queue.send("m")
    [message] = queue.receive()
    message = queue.update_visibility(message, 0)
    queue.peek()
    queue.approximate_count()
    [message] = queue.receive()
    queue.delete(message)
    queue.clear()

    assert meter.diff(meter.snapshot(), before) == {
        "queue.put": 1,
        "queue.get": 2,
        "queue.update": 1,
        "queue.peek": 1,
        "queue.count": 1,
        "queue.delete": 1,
        "queue.clear": 1,
    }


def test_threads_share_an_account_with_a_connection_each(account: EmbeddedStorageAccount) -> None:
    work = account.queue("work")
    work.create()
    errors: list[BaseException] = []

    def send_many(start: int) -> None:
        try:
            for n in range(start, start + 100):
                work.send(str(n))
        except BaseException as error:  # surfaced below: a thread's exception is otherwise lost
            errors.append(error)

    threads = [threading.Thread(target=send_many, args=(k * 100,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert work.approximate_count() == 400


def test_what_the_azure_client_refuses_itself_is_not_metered(queue: EmbeddedQueue) -> None:
    """The Azure backend refuses these before sending a request, so nothing is billed."""
    before = meter.snapshot()
    with pytest.raises(MessageTooLargeError):
        queue.send("x" * (MAX_QUEUE_MESSAGE_BYTES + 1))
    with pytest.raises(ValueError, match="32"):
        queue.receive(33)
    with pytest.raises(ValueError, match="32"):
        queue.peek(0)
    assert meter.diff(meter.snapshot(), before) == {}
