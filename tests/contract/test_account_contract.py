"""The account contract: creating, listing and deleting queues, containers and tables."""

from __future__ import annotations

from shared.storage.ports import StorageAccount
from tests.support.names import unique_name


def test_create_is_idempotent_and_listing_shows_what_was_created(storage: StorageAccount) -> None:
    queue, container, table = unique_name("q"), unique_name("c"), unique_name("t")
    for _ in range(2):
        storage.queue(queue).create()
        storage.container(container).create()
        storage.table(table).create()

    assert queue in storage.list_queues()
    assert container in storage.list_containers()
    assert table in storage.list_tables()
    assert storage.queue(queue).name == queue
    assert storage.container(container).name == container
    assert storage.table(table).name == table


def test_delete_queue_is_idempotent(storage: StorageAccount) -> None:
    name = unique_name("q")
    storage.queue(name).create()

    storage.queue(name).delete_queue()
    storage.queue(name).delete_queue()

    assert name not in storage.list_queues()


def test_the_account_has_a_name(storage: StorageAccount) -> None:
    assert storage.account_name
