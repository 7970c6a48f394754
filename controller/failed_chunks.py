"""The chunks that gave up: one entity per failed chunk in the chunks table.

A chunk fails when its work item (processor side) or its result message (controller side)
is dequeued too often and lands in a poison queue. The controller records it here, once per
chunk whatever the number of notices (an upsert on partition = batch id, row = chunk), and
batch completion counts it as settled.

Why the chunks table rather than a warehouse table: a failure is pipeline state, like the
poison queue it points to, not billing data; the table is already provisioned for per-chunk
state by every role; and it needs no schema migration of the warehouse. Completion stays
exact because a chunk's applied mark (warehouse) wins over its failure: a chunk counts as
failed only while it is not applied (see :mod:`controller.completion`). The one thing the
warehouse learns of a failure is that there was one: the recording controller sets the
batch row's ``has_failed_chunks``, so that tallies of batches without failures (nearly all)
never query this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from shared.storage.ports import Entity, Table

#: Errors are cut to this length (a table string property holds 32K characters).
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class FailedChunk:
    batch_id: str
    chunk: int
    poison_queue: str
    error: str
    failed_at: datetime


def chunk_row_key(chunk: int) -> str:
    """Zero-padded, so a partition query returns the chunks in numeric order."""
    return f"{chunk:06d}"


class FailedChunks:
    """Records and lists failed chunks (the ``chunks`` table, ``status = "failed"``)."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def record(self, batch_id: str, chunk: int, *, poison_queue: str, error: str) -> None:
        """Mark the chunk failed; idempotent (a repeat overwrites the same entity)."""
        self._table.upsert(
            Entity(
                batch_id,
                chunk_row_key(chunk),
                {
                    "status": "failed",
                    "chunk": chunk,
                    "poison_queue": poison_queue,
                    "error": error[:MAX_ERROR_CHARS],
                    "failed_at": datetime.now(UTC),
                },
            )
        )

    def of_batch(self, batch_id: str) -> list[FailedChunk]:
        """Every failed chunk of the batch, in chunk order (one partition query)."""
        failed = [
            FailedChunk(
                batch_id=batch_id,
                chunk=int(entity.properties["chunk"]),
                poison_queue=str(entity.properties.get("poison_queue", "")),
                error=str(entity.properties.get("error", "")),
                failed_at=entity.properties["failed_at"],
            )
            for entity in self._table.query(batch_id, status="failed")
        ]
        return sorted(failed, key=lambda failure: failure.chunk)
