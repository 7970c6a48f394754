"""The batch event: what is published when a batch reaches a final state.

A CloudEvents 1.0 event in structured JSON mode (one JSON object, the attributes beside
``data``), the same bytes on the ``batch-events`` topic and in a webhook's body::

    {"specversion": "1.0", "id": "…", "source": "/billing/batches",
     "type": "billing.batch.completed", "subject": "<batch id>", "time": "…",
     "datacontenttype": "application/json", "data": {…the status view's totals…}}

Its ``id`` is derived from the batch id and the outcome (a name-based UUID), so that one
outcome has one id wherever and however often it is published: receivers de-duplicate on
it. A batch closed ``failed`` that is redriven and completes has two outcomes, two events.
An ``abandoned`` batch (the initiator gave up on it before accepting it) was never
processed: its ``data`` has no warehouse figures, and ``reason`` says why.
The JSON schema is ``docs/schemas/batch-event.schema.json``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.domain.transactions import ControlTotals

SPEC_VERSION = "1.0"
SOURCE = "/billing/batches"
CONTENT_TYPE = "application/cloudevents+json"
#: The namespace of the name-based event ids (a fixed, random UUID).
_ID_NAMESPACE = uuid.UUID("7c1f4a52-3b0e-4d55-9a3e-5a8f0e6b2d41")


class Outcome(StrEnum):
    """A batch's final states, each an event ``type`` ``billing.batch.<outcome>``."""

    COMPLETED = "completed"
    FAILED = "failed"
    ABANDONED = "abandoned"

    @property
    def event_type(self) -> str:
        return f"billing.batch.{self.value}"


def event_id(batch_id: str, outcome: Outcome) -> str:
    """The one id of this batch's outcome (stable across crashes, relays and redeliveries)."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{batch_id}/{outcome.value}"))


class EventTotals(BaseModel):
    """Control or warehouse totals. The id checksum is an unsigned 64-bit integer, so a
    decimal string: JSON numbers beyond 2**53 lose bits in many parsers."""

    transactions: int = Field(ge=0)
    quantity: int = Field(ge=0)
    id_checksum: str = Field(pattern=r"^[0-9]{1,20}$")

    @classmethod
    def of(cls, totals: ControlTotals | None) -> EventTotals | None:
        if totals is None:
            return None
        return cls(
            transactions=totals.transactions,
            quantity=totals.quantity,
            id_checksum=str(totals.id_checksum),
        )


class EventChunks(BaseModel):
    total: int = Field(ge=0)
    applied: int = Field(ge=0)
    failed: int = Field(ge=0)


class BatchEventData(BaseModel):
    """The figures ``GET /batches/{id}`` shows for the closed batch."""

    batch_id: str
    status: Literal["completed", "failed", "abandoned"]
    priority: Literal["high", "normal", "low"]
    chunks: EventChunks
    failed_chunks: list[int] = Field(description="the chunks in a poison queue")
    control_totals: EventTotals | None = Field(description="taken at intake")
    warehouse_totals: EventTotals | None = Field(description="counted in the warehouse")
    reconciled: bool | None = Field(description="whether the two agree; null if not closed")
    completed_at: datetime
    invoice_mismatches: int = Field(
        ge=0,
        description="invoice figures (lines, quantity, gross, discount, net, tax, total) whose "
        "sum over the batch's invoices differs from the processors' chunk sums",
    )
    reason: Literal["intake_failed", "intake_stopped"] | None = Field(
        default=None,
        description="abandoned only: why the intake gave up on the batch before accepting it",
    )


class BatchEvent(BaseModel):
    """A CloudEvents 1.0 event in structured JSON mode (docs/schemas/batch-event.schema.json)."""

    model_config = ConfigDict(title="BatchEvent")

    specversion: Literal["1.0"]
    id: str = Field(description="one per batch outcome: de-duplicate on it")
    source: Literal["/billing/batches"]
    type: Literal["billing.batch.completed", "billing.batch.failed", "billing.batch.abandoned"]
    subject: str = Field(description="the batch id")
    time: datetime
    datacontenttype: Literal["application/json"]
    data: BatchEventData


def batch_event(
    *,
    batch_id: str,
    outcome: Outcome,
    time: datetime,
    priority: str,
    chunks: int,
    chunks_applied: int,
    failed_chunks: Sequence[int],
    control_totals: ControlTotals | None,
    warehouse_totals: ControlTotals | None,
    reconciled: bool | None,
    invoice_mismatches: int = 0,
    reason: str | None = None,
) -> dict[str, Any]:
    """The CloudEvent as a JSON-able dict; ``data`` mirrors ``GET /batches/{id}``'s figures."""
    event = BatchEvent.model_validate(
        {
            "specversion": SPEC_VERSION,
            "id": event_id(batch_id, outcome),
            "source": SOURCE,
            "type": outcome.event_type,
            "subject": batch_id,
            "time": time,
            "datacontenttype": "application/json",
            "data": BatchEventData.model_validate(
                {
                    "batch_id": batch_id,
                    "status": outcome.value,
                    "priority": priority,
                    "chunks": EventChunks(
                        total=chunks, applied=chunks_applied, failed=len(failed_chunks)
                    ),
                    "failed_chunks": list(failed_chunks),
                    "control_totals": EventTotals.of(control_totals),
                    "warehouse_totals": EventTotals.of(warehouse_totals),
                    "reconciled": reconciled,
                    "completed_at": time,
                    "invoice_mismatches": invoice_mismatches,
                    "reason": reason,
                }
            ),
        }
    )
    dumped = event.model_dump(mode="json")
    if reason is None:
        del dumped["data"]["reason"]  # only an abandoned event has one
    return dumped


def json_schema() -> dict[str, Any]:
    """The event's JSON schema, as docs/schemas/batch-event.schema.json holds it."""
    schema = BatchEvent.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def encode(event: Mapping[str, Any]) -> bytes:
    """The event's bytes as published and as signed (compact, keys in a fixed order)."""
    return json.dumps(event, separators=(",", ":"), sort_keys=True).encode()
