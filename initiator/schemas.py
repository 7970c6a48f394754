"""The JSON bodies of the initiator's API, as pydantic models for OpenAPI."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from initiator.intake import Problem
from shared.contracts.batch_records import BatchRecord
from shared.domain.priority import Priority
from shared.domain.transactions import ControlTotals


class BatchAccepted(BaseModel):
    """The answer to ``POST /batches`` (202, or 200 for an idempotent replay)."""

    batch_id: str
    transactions: int
    chunks: int
    priority: Priority
    status_url: str


class ChunkCounts(BaseModel):
    total: int
    applied: int
    failed: int
    in_flight: int


class BatchTimings(BaseModel):
    received_at: datetime
    accepted_at: datetime | None
    completed_at: datetime | None = None
    intake_seconds: float | None = Field(description="from the first byte to accepted")
    end_to_end_seconds: float | None = Field(
        default=None, description="from the first byte to the batch closed in the warehouse"
    )
    throughput: float | None = Field(
        default=None, description="transactions per second, end to end"
    )


class BatchStatusView(BaseModel):
    """``GET /batches/{id}``: what is known about the batch now."""

    batch_id: str
    status: str = Field(description="receiving, accepting, accepted, processing, completed, failed")
    priority: Priority
    transactions: int
    chunks: ChunkCounts
    control_totals: ControlTotals | None
    warehouse_totals: ControlTotals | None = None
    reconciled: bool | None = Field(default=None, description="null until the batch closes")
    failed_chunks: list[int] = Field(default_factory=list, description="chunks in a poison queue")
    pricebook_version: str
    payload_bytes: int
    timings: BatchTimings

    @classmethod
    def of(cls, record: BatchRecord) -> BatchStatusView:
        """The view of a batch record: the whole status lives in it (the controller copies
        its tallies and the warehouse's outcome there), so a poll is one table read."""
        settled = record.chunks_applied + record.chunks_failed
        end_to_end = (
            (record.completed_at - record.received_at).total_seconds()
            if record.completed_at is not None
            else None
        )
        return cls(
            batch_id=record.batch_id,
            status=record.status.value,
            priority=record.priority,
            transactions=record.transactions,
            chunks=ChunkCounts(
                total=record.chunks,
                applied=record.chunks_applied,
                failed=record.chunks_failed,
                in_flight=max(record.chunks - settled, 0),
            ),
            control_totals=record.control_totals,
            warehouse_totals=record.warehouse_totals,
            reconciled=record.reconciled,
            failed_chunks=list(record.failed_chunks),
            pricebook_version=record.pricebook_version,
            payload_bytes=record.payload_bytes,
            timings=BatchTimings(
                received_at=record.received_at,
                accepted_at=record.accepted_at,
                completed_at=record.completed_at,
                intake_seconds=record.elapsed_intake_seconds(),
                end_to_end_seconds=end_to_end,
                throughput=record.transactions / end_to_end if end_to_end else None,
            ),
        )


class PricebookView(BaseModel):
    version: str
    pricebook: dict[str, Any] = Field(description="the pricebook in canonical form")


class ProblemDetails(BaseModel):
    """Every 4xx of the API: a title, the status and, for a rejected batch, the problems."""

    title: str
    status: int
    detail: str | None = None
    problems: list[Problem] = Field(default_factory=list)
    problems_truncated: bool = False
