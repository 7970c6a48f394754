"""The storage ports: a blob container, a queue and a table, each a small interface.

Two backends implement them with the same semantics: ``shared.storage.azure`` (the official
SDKs) and ``shared.storage.embedded`` (one local folder, no server). Both raise the azure-core
exceptions (``ResourceNotFoundError``, ``ResourceExistsError``, ``ResourceModifiedError``)
so callers write one ``except`` whatever the backend. One contract suite
(``tests/contract``) holds them to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Protocol

#: Azure Storage rejects a queue message above 64 KiB (after encoding); so do we.
MAX_QUEUE_MESSAGE_BYTES = 64 * 1024
#: Azure Storage returns at most 32 messages per receive.
MAX_MESSAGES_PER_RECEIVE = 32
#: What :meth:`BlobContainer.read_blocks` yields at a time: the SDK's own download chunk.
READ_BLOCK_BYTES = 4 * 1024 * 1024


#: A block to stage: its bytes, or a binary file positioned at its start (read to its end),
#: so that a caller holding a large block on disk never loads it into memory.
BlockData = bytes | IO[bytes]


def block_length(data: BlockData) -> int:
    """The bytes a block holds: those left in a file from where it stands, or the bytes'."""
    if isinstance(data, bytes):
        return len(data)
    start = data.tell()
    end = data.seek(0, 2)
    data.seek(start)
    return end - start


class MessageTooLargeError(ValueError):
    """A queue message above :data:`MAX_QUEUE_MESSAGE_BYTES`: send a blob reference instead."""


@dataclass(frozen=True)
class QueueMessage:
    """A received message. ``pop_receipt`` changes on every receive and visibility update."""

    id: str
    pop_receipt: str
    content: str
    dequeue_count: int
    inserted_on: datetime | None = None
    next_visible_on: datetime | None = None


class Queue(Protocol):
    """One Azure-Storage-style queue."""

    @property
    def name(self) -> str: ...

    def create(self) -> None:
        """Create the queue if it does not exist (idempotent)."""
        ...

    def delete_queue(self) -> None: ...

    def send(self, content: str, *, visibility_timeout: int = 0) -> None:
        """Enqueue ``content`` (UTF-8 text); :class:`MessageTooLargeError` above 64 KiB."""
        ...

    def receive(
        self, max_messages: int = MAX_MESSAGES_PER_RECEIVE, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        """Take up to ``max_messages`` (≤ 32) visible messages, hiding them for the timeout."""
        ...

    def delete(self, message: QueueMessage) -> None:
        """Delete by id and pop receipt; a stale receipt raises ``ResourceNotFoundError``."""
        ...

    def update_visibility(self, message: QueueMessage, visibility_timeout: int) -> QueueMessage:
        """Extend (or shorten) the message's invisibility; returns it with its new receipt."""
        ...

    def peek(self, max_messages: int = MAX_MESSAGES_PER_RECEIVE) -> list[QueueMessage]: ...

    def approximate_count(self) -> int: ...

    def clear(self) -> None: ...


@dataclass(frozen=True)
class BlobProperties:
    name: str
    etag: str
    size: int
    last_modified: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Blob:
    data: bytes
    properties: BlobProperties


class BlobContainer(Protocol):
    """One blob container. ETags give optimistic concurrency."""

    @property
    def name(self) -> str: ...

    def create(self) -> None:
        """Create the container if it does not exist (idempotent)."""
        ...

    def put(
        self,
        blob: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> BlobProperties:
        """Write a whole blob.

        ``if_match``: only if the current ETag equals it, else ``ResourceModifiedError``.
        ``create_only``: only if no blob exists (``If-None-Match: *``), else
        ``ResourceExistsError``.
        """
        ...

    def get(self, blob: str) -> Blob:
        """Read a whole blob; ``ResourceNotFoundError`` if absent."""
        ...

    def head(self, blob: str) -> BlobProperties: ...

    def read_blocks(self, blob: str, block_size: int = READ_BLOCK_BYTES) -> Iterator[bytes]:
        """Read a blob as a stream of blocks of at most ``block_size`` bytes, never whole;
        ``ResourceNotFoundError`` (on the first block) if absent."""
        ...

    def stage_block(self, blob: str, block_id: str, data: BlockData) -> None:
        """Stage one block of a blob to be (``Put Block``), from bytes or from a file read
        from where it stands to its end; staging the same id again replaces it. Nothing
        is readable before :meth:`commit_blocks`. Ids are as the SDK takes them (base64
        on the wire)."""
        ...

    def commit_blocks(self, blob: str, block_ids: Sequence[str]) -> BlobProperties:
        """Write the blob as the staged blocks in this order (``Put Block List``); the
        staged blocks are then gone. An id not staged: ``HttpResponseError`` (400). (Azure
        would also take ids of the blob's committed blocks; no caller needs that, and the
        embedded backend does not keep them.)"""
        ...

    def list(self, prefix: str = "") -> Iterator[BlobProperties]: ...

    def delete(self, blob: str, *, if_match: str | None = None) -> None:
        """Delete a blob; absent is not an error (idempotent cleanup)."""
        ...


@dataclass(frozen=True)
class Entity:
    """A table entity: keys, properties (str, int, float, bool, bytes, datetime) and ETag."""

    partition_key: str
    row_key: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    etag: str = ""


class Table(Protocol):
    """One Azure-Tables-style table."""

    @property
    def name(self) -> str: ...

    def create(self) -> None:
        """Create the table if it does not exist (idempotent)."""
        ...

    def insert(self, entity: Entity) -> Entity:
        """Create-only; ``ResourceExistsError`` if the keys exist. Returns it with its ETag."""
        ...

    def upsert(self, entity: Entity) -> Entity:
        """Insert or replace, unconditionally."""
        ...

    def update(self, entity: Entity, *, if_match: str, merge: bool = True) -> Entity:
        """Conditional update; ``ResourceModifiedError`` if the ETag moved on."""
        ...

    def get(self, partition_key: str, row_key: str) -> Entity:
        """``ResourceNotFoundError`` if absent."""
        ...

    def query(self, partition_key: str | None = None, **equals: Any) -> Iterator[Entity]:
        """Entities of one partition (or all) whose properties equal ``equals``."""
        ...

    def delete(self, partition_key: str, row_key: str, *, if_match: str | None = None) -> None:
        """Delete; absent is not an error."""
        ...


class StorageAccount(Protocol):
    """The entry point of a backend: hands out queues, containers and tables by name."""

    @property
    def account_name(self) -> str: ...

    def queue(self, name: str) -> Queue: ...

    def container(self, name: str) -> BlobContainer: ...

    def table(self, name: str) -> Table: ...

    def list_queues(self) -> list[str]: ...

    def list_containers(self) -> list[str]: ...

    def list_tables(self) -> list[str]: ...

    def close(self) -> None: ...
