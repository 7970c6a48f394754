"""The batch event: what is published when a batch reaches a final state.

A CloudEvents 1.0 event in structured JSON mode (one JSON object, the attributes beside
``data``), the same bytes on the ``batch-events`` topic and in a webhook's body::

    {"specversion": "1.0", "id": "…", "source": "/billing/batches",
     "type": "billing.batch.completed", "subject": "<batch id>", "time": "…",
     "datacontenttype": "application/json", "data": {…the status view's totals…}}

Its ``id`` is derived from the batch id and the outcome (a name-based UUID), so that one
outcome has one id wherever and however often it is published: receivers de-duplicate on
it. A batch closed ``failed`` that is redriven and completes has two outcomes, two events.
The JSON schema is ``docs/schemas/batch-event.schema.json``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

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


def _totals(totals: ControlTotals | None) -> dict[str, Any] | None:
    if totals is None:
        return None
    # The checksum is an unsigned 64-bit integer: a string, as JSON numbers lose its bits.
    return {
        "transactions": totals.transactions,
        "quantity": totals.quantity,
        "id_checksum": str(totals.id_checksum),
    }


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
) -> dict[str, Any]:
    """The CloudEvent as a JSON-able dict; ``data`` mirrors ``GET /batches/{id}``'s figures."""
    return {
        "specversion": SPEC_VERSION,
        "id": event_id(batch_id, outcome),
        "source": SOURCE,
        "type": outcome.event_type,
        "subject": batch_id,
        "time": time.isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": {
            "batch_id": batch_id,
            "status": outcome.value,
            "priority": priority,
            "chunks": {"total": chunks, "applied": chunks_applied, "failed": len(failed_chunks)},
            "failed_chunks": list(failed_chunks),
            "control_totals": _totals(control_totals),
            "warehouse_totals": _totals(warehouse_totals),
            "reconciled": reconciled,
            "completed_at": time.isoformat().replace("+00:00", "Z"),
            "invoice_mismatches": invoice_mismatches,
        },
    }


def encode(event: Mapping[str, Any]) -> bytes:
    """The event's bytes as published and as signed (compact, keys in a fixed order)."""
    return json.dumps(event, separators=(",", ":"), sort_keys=True).encode()
