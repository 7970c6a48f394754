"""Metering: both backends count storage requests the same way (every request is billed)."""

from __future__ import annotations

from shared import meter
from shared.storage.ports import BlobContainer, Entity, Queue, StorageAccount
from tests.support.names import unique_name


def counted(before: dict[str, int], service: str) -> dict[str, int]:
    return {k: v for k, v in meter.diff(meter.snapshot(), before).items() if k.startswith(service)}


def test_a_receive_counts_as_one_queue_get_full_or_empty(queue: Queue) -> None:
    for n in range(3):
        queue.send(f"m{n}")

    before = meter.snapshot()
    assert len(queue.receive()) == 3
    assert counted(before, "queue.") == {"queue.get": 1}

    before = meter.snapshot()
    assert queue.receive() == []
    assert counted(before, "queue.") == {"queue.get": 1}


def test_send_delete_and_peek_count_once_each(queue: Queue) -> None:
    before = meter.snapshot()
    queue.send("m")
    [received] = queue.receive()
    queue.delete(received)
    queue.peek()

    assert counted(before, "queue.") == {
        "queue.put": 1,
        "queue.get": 1,
        "queue.delete": 1,
        "queue.peek": 1,
    }


def test_blob_writes_and_reads_are_counted(container: BlobContainer) -> None:
    before = meter.snapshot()
    container.put("b", b"x")
    container.get("b")
    container.head("b")

    assert counted(before, "blob.") == {"blob.put": 1, "blob.get": 1, "blob.head": 1}


def test_each_kind_of_request_is_counted_under_the_same_name(storage: StorageAccount) -> None:
    queue = storage.queue(unique_name("q"))
    container = storage.container(unique_name("c"))
    table = storage.table(unique_name("t"))
    before = meter.snapshot()

    queue.create()
    queue.send("m")
    [received] = queue.receive()
    received = queue.update_visibility(received, 30)
    queue.approximate_count()
    queue.clear()
    queue.delete_queue()
    container.create()  # a PUT, as Azure bills it
    container.put("b", b"x")
    list(container.list())
    container.delete("b")
    table.create()
    table.insert(Entity("p", "r", {"v": 1}))
    list(table.query("p"))

    assert meter.diff(meter.snapshot(), before) == {
        "queue.admin": 2,
        "queue.put": 1,
        "queue.get": 1,
        "queue.update": 1,
        "queue.count": 1,
        "queue.clear": 1,
        "blob.put": 2,
        "blob.list": 1,
        "blob.delete": 1,
        "table.write": 2,
        "table.read": 1,
    }


def test_blob_requests_are_also_counted_by_their_container(storage: StorageAccount) -> None:
    name = unique_name("c")
    container = storage.container(name)
    before = meter.container_snapshot()

    container.create()
    container.put("dir/b", b"x")
    container.get("dir/b")
    list(container.list())
    container.delete("dir/b")

    assert meter.diff(meter.container_snapshot(), before) == {
        ("blob.put", name): 2,
        ("blob.get", name): 1,
        ("blob.list", name): 1,
        ("blob.delete", name): 1,
    }
