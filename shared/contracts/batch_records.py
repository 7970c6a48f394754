"""The batch record: one table entity per batch, which every role reads.

Its status is a :class:`~shared.contracts.batch_status.BatchStatus`; processors ask
:func:`admission` before rating a work item.

Records live in the batches table under one fixed partition (:data:`BATCH_PARTITION`, row
key = batch id): batches arrive a few times a day, far below a partition's 2,000
operations/s, and one partition makes "every batch in state X" a single-partition query.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from azure.core.exceptions import ResourceNotFoundError
from pydantic import BaseModel, ConfigDict, Field

from shared.contracts.batch_status import UNFINISHED_INTAKE, AbandonReason, BatchStatus
from shared.domain.priority import Priority
from shared.domain.transactions import ControlTotals
from shared.storage.ports import Entity, Table

BATCH_PARTITION = "batch"
_TOTALS_PREFIX = "control_"
_WAREHOUSE_PREFIX = "warehouse_"
#: A record names at most this many failed chunks (a table property holds 64 KiB); the
#: controller's chunks table has them all.
MAX_NAMED_FAILED_CHUNKS = 100


class BatchRecord(BaseModel):
    """What the table holds about a batch. Unknown properties (other roles') are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    batch_id: str
    status: BatchStatus
    priority: Priority
    pricebook_version: str = Field(description="the pricebook pinned at acceptance")
    received_at: datetime
    accepted_at: datetime | None = None
    updated_at: datetime | None = Field(
        default=None, description="last sign of life of the intake (a crash stops it)"
    )
    transactions: int = Field(default=0, ge=0)
    chunks: int = Field(default=0, ge=0)
    chunks_applied: int = Field(default=0, ge=0)
    chunks_failed: int = Field(default=0, ge=0)
    payload_bytes: int = Field(default=0, ge=0, description="stored (compressed) chunk bytes")
    body_bytes: int = Field(default=0, ge=0, description="request body bytes as received")
    body_sha256: str | None = None
    control_totals: ControlTotals | None = None
    idempotency_key_hash: str | None = None
    callback: str | None = Field(
        default=None, description="the sender's webhook URL for the batch's outcome event"
    )
    # Written by the deciding write of an abandonment (initiator.publishing.cleanup).
    abandon_reason: AbandonReason | None = None
    abandoned_at: datetime | None = None
    # Written by the controller when it closes the batch (copied from the warehouse row).
    completed_at: datetime | None = None
    warehouse_totals: ControlTotals | None = None
    reconciled: bool | None = Field(default=None, description="null until the batch is closed")
    failed_chunks: tuple[int, ...] = Field(
        default=(), description=f"the first {MAX_NAMED_FAILED_CHUNKS} failed chunk numbers"
    )

    def to_properties(self) -> dict[str, Any]:
        """Flat table properties. ``id_checksum`` is unsigned 64-bit, above Edm.Int64: a string."""
        properties = self.model_dump(
            exclude={"control_totals", "warehouse_totals", "failed_chunks"},
            exclude_none=True,
            mode="python",
        )
        properties["status"] = self.status.value
        if self.abandon_reason is not None:
            properties["abandon_reason"] = self.abandon_reason.value
        for prefix, totals in (
            (_TOTALS_PREFIX, self.control_totals),
            (_WAREHOUSE_PREFIX, self.warehouse_totals),
        ):
            if totals is not None:
                properties[f"{prefix}transactions"] = totals.transactions
                properties[f"{prefix}quantity"] = totals.quantity
                properties[f"{prefix}id_checksum"] = str(totals.id_checksum)
        # A table property holds no list: the numbers as one comma-separated string, written
        # even when empty, since updates merge and must clear a redriven batch's old list.
        properties["failed_chunks"] = ",".join(map(str, self.failed_chunks))
        return properties

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> BatchRecord:
        values = dict(properties)
        for prefix, field in (
            (_TOTALS_PREFIX, "control_totals"),
            (_WAREHOUSE_PREFIX, "warehouse_totals"),
        ):
            totals = {
                name.removeprefix(prefix): values.pop(name)
                for name in list(values)
                if name.startswith(prefix)
            }
            if totals:
                values[field] = ControlTotals(
                    transactions=int(totals["transactions"]),
                    quantity=int(totals["quantity"]),
                    id_checksum=int(totals["id_checksum"]),
                )
        failed = values.pop("failed_chunks", "")
        values["failed_chunks"] = tuple(int(number) for number in str(failed).split(",") if number)
        return cls.model_validate(values)

    def last_seen(self) -> datetime:
        """When the initiator last touched the record: the sweeper's measure of staleness."""
        return self.updated_at or self.received_at

    def elapsed_intake_seconds(self) -> float | None:
        if self.accepted_at is None:
            return None
        return (self.accepted_at - self.received_at).total_seconds()


@dataclass(frozen=True)
class StoredBatch:
    """A record as read or written, with the ETag the next conditional update needs."""

    record: BatchRecord
    etag: str


class BatchRecords:
    """The batch records in the batches table."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def create(self, record: BatchRecord) -> StoredBatch:
        """Insert a new record; ``ResourceExistsError`` if the batch id is taken."""
        entity = self._table.insert(_entity(record))
        return StoredBatch(record, entity.etag)

    def save(self, current: StoredBatch, record: BatchRecord) -> StoredBatch:
        """Move ``current`` to ``record`` if nobody changed it since (``ResourceModifiedError``).

        A merge, so properties that other roles added to the entity survive.
        """
        entity = self._table.update(_entity(record), if_match=current.etag, merge=True)
        return StoredBatch(record, entity.etag)

    def find(self, batch_id: str) -> StoredBatch | None:
        try:
            entity = self._table.get(BATCH_PARTITION, batch_id)
        except ResourceNotFoundError:
            return None
        return StoredBatch(BatchRecord.from_properties(entity.properties), entity.etag)

    def all(self) -> Iterator[BatchRecord]:
        """Every batch record (one paged query of the batch partition)."""
        for entity in self._table.query(BATCH_PARTITION):
            yield BatchRecord.from_properties(entity.properties)

    def in_status(self, *statuses: BatchStatus) -> Iterator[StoredBatch]:
        for status in statuses:
            for entity in self._table.query(BATCH_PARTITION, status=status.value):
                yield StoredBatch(BatchRecord.from_properties(entity.properties), entity.etag)

    def state(self, batch_id: str) -> BatchState:
        """The processor's question, answered by :func:`admission` (one table read)."""
        found = self.find(batch_id)
        verdict = admission(None if found is None else found.record)
        return _STATE_OF[verdict]

    def delete(self, current: StoredBatch) -> None:
        """Delete the record if it is still as read (``ResourceModifiedError`` otherwise)."""
        self._table.delete(BATCH_PARTITION, current.record.batch_id, if_match=current.etag)


def _entity(record: BatchRecord) -> Entity:
    return Entity(BATCH_PARTITION, record.batch_id, record.to_properties())


#: What a processor learns of a work item's batch: rate it, wait for it, or drop the item.
BatchState = Literal["accepted", "pending", "gone"]


class Admission(StrEnum):
    """What a processor does with a work item, given the state of its batch."""

    PROCESS = "process"
    WAIT = "wait"
    """Leave the message to reappear: the initiator may still be finishing the batch."""
    DROP = "drop"
    """Delete the message unprocessed: the batch never became accepted and never will."""


def admission(record: BatchRecord | None) -> Admission:
    """The rule that makes a half-accepted batch invisible to processors.

    Work items are sent while the batch is ``accepting`` and the record turns ``accepted``
    right after; a processor that sees an item in that window waits rather than drops it.
    A batch that is gone (swept) or ``abandoned`` will never be accepted: its items are
    dropped.
    """
    if record is None or record.status is BatchStatus.ABANDONED:
        return Admission.DROP
    if record.status in UNFINISHED_INTAKE:
        return Admission.WAIT
    return Admission.PROCESS


_STATE_OF: dict[Admission, BatchState] = {
    Admission.PROCESS: "accepted",
    Admission.WAIT: "pending",
    Admission.DROP: "gone",
}


def utc_now() -> datetime:
    return datetime.now(UTC)
