"""Looking at what the initiator left in storage: traces, payloads, work items."""

from __future__ import annotations

from dataclasses import dataclass

from shared.contracts.chunk_payload import NumberedTransaction, decode_chunk
from shared.contracts.messages import WorkItem
from shared.domain.priority import Priority
from shared.settings import Settings
from shared.storage.ports import StorageAccount


def token_of(settings: Settings) -> str:
    """The unique part of this test's resource names (see the ``make_settings`` fixture)."""
    return settings.output_queue[1:]


@dataclass(frozen=True)
class Trace:
    """Everything in the test's containers, queues and tables (and which exist)."""

    blobs: dict[str, frozenset[str]]
    queue_depths: dict[str, int]
    entities: dict[str, frozenset[tuple[str, str]]]

    @classmethod
    def take(cls, storage: StorageAccount, settings: Settings) -> Trace:
        token = token_of(settings)
        containers = [name for name in storage.list_containers() if token in name]
        queues = [name for name in storage.list_queues() if token in name]
        tables = [name for name in storage.list_tables() if token in name]
        return cls(
            blobs={
                name: frozenset(blob.name for blob in storage.container(name).list())
                for name in containers
            },
            queue_depths={name: storage.queue(name).approximate_count() for name in queues},
            entities={
                name: frozenset((e.partition_key, e.row_key) for e in storage.table(name).query())
                for name in tables
            },
        )


def payload_rows(
    storage: StorageAccount, settings: Settings, batch_id: str
) -> list[NumberedTransaction]:
    """Every chunk of the batch decoded, concatenated in chunk order."""
    return [row for chunk in payload_chunks(storage, settings, batch_id) for row in chunk]


def payload_chunks(
    storage: StorageAccount, settings: Settings, batch_id: str
) -> list[list[NumberedTransaction]]:
    """The rows of each chunk of the batch, in chunk order."""
    container = storage.container(settings.payload_container)
    names = sorted(blob.name for blob in container.list(prefix=f"{batch_id}/"))
    chunks: list[list[NumberedTransaction]] = []
    for index, name in enumerate(names):
        payload = decode_chunk(container.get(name).data)
        assert (payload.batch_id, payload.chunk) == (batch_id, index)
        chunks.append(payload.rows)
    return chunks


def queued_work_items(
    storage: StorageAccount, settings: Settings, priority: Priority
) -> dict[str, list[WorkItem]]:
    """The work items on each partition of ``priority`` (taken invisible for a while)."""
    found: dict[str, list[WorkItem]] = {}
    for name in settings.work_queues(priority):
        queue = storage.queue(name)
        items: list[WorkItem] = []
        while messages := queue.receive(32, visibility_timeout=300):
            items.extend(WorkItem.from_text(message.content) for message in messages)
        found[name] = items
    return found
