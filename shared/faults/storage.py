"""The embedded backend's fault twin: the storage ports wrapped in a fault plan.

:class:`FaultyStorageAccount` wraps any :class:`~shared.storage.ports.StorageAccount`
(the embedded one, in practice: the Azure one gets its faults at the transport, see
:mod:`shared.faults.transport`). Every call goes through a
:class:`~shared.faults.retrying.RetryingInjector`, which fails, times out or loses it as
the plan draws and retries it as the SDK would, so that both backends show the same
behaviour under the same ``BILLING_FAULTS``. Argument checks the Azure adapters make
before sending anything (message size, batch size) come first here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

from shared.faults.retrying import RetryingInjector
from shared.storage import queue_rules
from shared.storage.ports import (
    MAX_MESSAGES_PER_RECEIVE,
    READ_BLOCK_BYTES,
    Blob,
    BlobContainer,
    BlobProperties,
    BlockData,
    Entity,
    Queue,
    QueueMessage,
    StorageAccount,
    Table,
)


class FaultyQueue:
    def __init__(self, inner: Queue, faults: RetryingInjector) -> None:
        self._inner = inner
        self._faults = faults

    @property
    def name(self) -> str:
        return self._inner.name

    def create(self) -> None:
        self._faults.call("queue.create", self._inner.create)

    def delete_queue(self) -> None:
        self._faults.call("queue.delete_queue", self._inner.delete_queue)

    def send(self, content: str, *, visibility_timeout: int = 0) -> None:
        queue_rules.check_message(content)
        self._faults.call(
            "queue.send", lambda: self._inner.send(content, visibility_timeout=visibility_timeout)
        )

    def receive(
        self, max_messages: int = MAX_MESSAGES_PER_RECEIVE, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        queue_rules.check_batch_size(max_messages)
        return self._faults.call(
            "queue.receive", lambda: self._inner.receive(max_messages, visibility_timeout)
        )

    def delete(self, message: QueueMessage) -> None:
        self._faults.call("queue.delete", lambda: self._inner.delete(message))

    def update_visibility(self, message: QueueMessage, visibility_timeout: int) -> QueueMessage:
        return self._faults.call(
            "queue.update_visibility",
            lambda: self._inner.update_visibility(message, visibility_timeout),
        )

    def peek(self, max_messages: int = MAX_MESSAGES_PER_RECEIVE) -> list[QueueMessage]:
        queue_rules.check_batch_size(max_messages)
        return self._faults.call("queue.peek", lambda: self._inner.peek(max_messages))

    def approximate_count(self) -> int:
        return self._faults.call("queue.approximate_count", self._inner.approximate_count)

    def clear(self) -> None:
        self._faults.call("queue.clear", self._inner.clear)


class FaultyBlobContainer:
    def __init__(self, inner: BlobContainer, faults: RetryingInjector) -> None:
        self._inner = inner
        self._faults = faults

    @property
    def name(self) -> str:
        return self._inner.name

    def create(self) -> None:
        self._faults.call("blob.create", self._inner.create)

    def put(
        self,
        blob: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> BlobProperties:
        return self._faults.call(
            "blob.put",
            lambda: self._inner.put(
                blob, data, if_match=if_match, create_only=create_only, metadata=metadata
            ),
        )

    def get(self, blob: str) -> Blob:
        return self._faults.call("blob.get", lambda: self._inner.get(blob))

    def head(self, blob: str) -> BlobProperties:
        return self._faults.call("blob.head", lambda: self._inner.head(blob))

    def read_blocks(self, blob: str, block_size: int = READ_BLOCK_BYTES) -> Iterator[bytes]:
        # one draw for the opening read, as the Azure client's first ranged GET
        def opened() -> Iterator[bytes]:
            blocks = self._inner.read_blocks(blob, block_size)
            first = next(blocks, None)  # the read starts here: a missing blob raises now
            return iter(()) if first is None else chain([first], blocks)

        return self._faults.call("blob.get", opened)

    def stage_block(self, blob: str, block_id: str, data: BlockData) -> None:
        # Each attempt sends the block from its start, as the SDK rewinds a stream it retries.
        start = None if isinstance(data, bytes) else data.tell()

        def attempt() -> None:
            if start is not None and not isinstance(data, bytes):
                data.seek(start)
            self._inner.stage_block(blob, block_id, data)

        self._faults.call("blob.put", attempt)

    def commit_blocks(self, blob: str, block_ids: Sequence[str]) -> BlobProperties:
        return self._faults.call("blob.put", lambda: self._inner.commit_blocks(blob, block_ids))

    def list(self, prefix: str = "") -> Iterator[BlobProperties]:
        # one draw per listing (one page: test deployments hold few blobs)
        return iter(self._faults.call("blob.list", lambda: list(self._inner.list(prefix))))

    def delete(self, blob: str, *, if_match: str | None = None) -> None:
        self._faults.call("blob.delete", lambda: self._inner.delete(blob, if_match=if_match))


class FaultyTable:
    def __init__(self, inner: Table, faults: RetryingInjector) -> None:
        self._inner = inner
        self._faults = faults

    @property
    def name(self) -> str:
        return self._inner.name

    def create(self) -> None:
        self._faults.call("table.create", self._inner.create)

    def insert(self, entity: Entity) -> Entity:
        return self._faults.call("table.insert", lambda: self._inner.insert(entity))

    def upsert(self, entity: Entity) -> Entity:
        return self._faults.call("table.upsert", lambda: self._inner.upsert(entity))

    def update(self, entity: Entity, *, if_match: str, merge: bool = True) -> Entity:
        return self._faults.call(
            "table.update.merge" if merge else "table.update.replace",
            lambda: self._inner.update(entity, if_match=if_match, merge=merge),
        )

    def get(self, partition_key: str, row_key: str) -> Entity:
        return self._faults.call("table.get", lambda: self._inner.get(partition_key, row_key))

    def query(self, partition_key: str | None = None, **equals: Any) -> Iterator[Entity]:
        return iter(
            self._faults.call(
                "table.query", lambda: list(self._inner.query(partition_key, **equals))
            )
        )

    def delete(self, partition_key: str, row_key: str, *, if_match: str | None = None) -> None:
        self._faults.call(
            "table.delete", lambda: self._inner.delete(partition_key, row_key, if_match=if_match)
        )


class FaultyStorageAccount:
    """``inner`` with each service's calls under its own injector (``None``: no faults)."""

    def __init__(
        self,
        inner: StorageAccount,
        *,
        blob: RetryingInjector | None,
        queue: RetryingInjector | None,
        table: RetryingInjector | None,
    ) -> None:
        self.inner = inner
        self._blob = blob
        self._queue = queue
        self._table = table

    @property
    def account_name(self) -> str:
        return self.inner.account_name

    def queue(self, name: str) -> Queue:
        queue = self.inner.queue(name)
        return queue if self._queue is None else FaultyQueue(queue, self._queue)

    def container(self, name: str) -> BlobContainer:
        container = self.inner.container(name)
        return container if self._blob is None else FaultyBlobContainer(container, self._blob)

    def table(self, name: str) -> Table:
        table = self.inner.table(name)
        return table if self._table is None else FaultyTable(table, self._table)

    def list_queues(self) -> list[str]:
        if self._queue is None:
            return self.inner.list_queues()
        return self._queue.call("account.list_queues", self.inner.list_queues)

    def list_containers(self) -> list[str]:
        if self._blob is None:
            return self.inner.list_containers()
        return self._blob.call("account.list_containers", self.inner.list_containers)

    def list_tables(self) -> list[str]:
        if self._table is None:
            return self.inner.list_tables()
        return self._table.call("account.list_tables", self.inner.list_tables)

    def close(self) -> None:
        self.inner.close()
