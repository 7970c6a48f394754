"""The JSON bodies of the initiator's API, as pydantic models for OpenAPI."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from initiator.intake import Problem
from shared.contracts.batch_records import BatchRecord
from shared.contracts.batch_status import OPEN_STATUSES, BatchStatus
from shared.coordination.gate import GateHistory
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
    rated: int = Field(
        default=0,
        description="chunks a processor has rated (their results written), applied or "
        "waiting to be",
    )
    applied: int = Field(description="chunks in the warehouse")
    failed: int = Field(description="how many chunks failed (in a poison queue)")
    in_flight: int = Field(description="chunks neither applied nor failed yet")


#: The release gate: processors take work while ``released``, wait while ``held``.
GateState = Literal["released", "held"]


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
    waiting_for_release_seconds: float = Field(
        default=0.0,
        description="time since acceptance the release gate held the processors (so far, "
        "while the batch is open)",
    )
    processing_seconds: float | None = Field(
        default=None,
        description="end to end without the time waiting for the release",
    )
    processing_throughput: float | None = Field(
        default=None,
        description="transactions per second over processing_seconds",
    )


class BatchStatusView(BaseModel):
    """``GET /batches/{id}``: what is known about the batch now."""

    batch_id: str
    status: BatchStatus = Field(
        description="receiving, accepting, accepted (on the queues), processing, completed, "
        "failed, or abandoned (the intake gave up on it)"
    )
    gate: GateState = Field(
        default="released",
        description="the release gate now: held, an open batch waits for a release",
    )
    waiting_for_release: bool = Field(
        default=False, description="the batch is open and the gate holds the processors"
    )
    priority: Priority
    transactions: int
    chunks: ChunkCounts
    control_totals: ControlTotals | None
    warehouse_totals: ControlTotals | None = None
    reconciled: bool | None = Field(default=None, description="null until the batch closes")
    failed_chunks: list[int] = Field(
        default_factory=list,
        description="the numbers (indexes) of the failed chunks, the first 100; their count "
        "is chunks.failed",
    )
    pricebook_version: str
    payload_bytes: int
    timings: BatchTimings

    @classmethod
    def of(
        cls,
        record: BatchRecord,
        gate: GateHistory | None = None,
        *,
        rated: int | None = None,
        now: datetime | None = None,
    ) -> BatchStatusView:
        """The view of a batch record: the status lives in it (the controller copies its
        tallies and the warehouse's outcome there), ``gate`` (the release gate and its held
        spells; None: released, never held) adds the wait for a release, and ``rated``
        the chunks rated so far (:mod:`initiator.observability.rated`; None: the applied
        ones)."""
        gate = gate or GateHistory(released=True)
        settled = record.chunks_applied + record.chunks_failed
        end_to_end = (
            (record.completed_at - record.received_at).total_seconds()
            if record.completed_at is not None
            else None
        )
        waited = 0.0
        if record.accepted_at is not None:
            until = record.completed_at or now or datetime.now(UTC)
            waited = gate.held_seconds(record.accepted_at, until)
        processing = max(end_to_end - waited, 0.0) if end_to_end is not None else None
        is_open = record.status in OPEN_STATUSES
        return cls(
            batch_id=record.batch_id,
            status=record.status,
            gate="released" if gate.released else "held",
            waiting_for_release=is_open and not gate.released,
            priority=record.priority,
            transactions=record.transactions,
            chunks=ChunkCounts(
                total=record.chunks,
                rated=record.chunks_applied if rated is None else rated,
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
                waiting_for_release_seconds=waited,
                processing_seconds=processing,
                processing_throughput=record.transactions / processing if processing else None,
            ),
        )


class PricebookView(BaseModel):
    version: str
    pricebook: dict[str, Any] = Field(description="the pricebook in canonical form")


#: The media type of every error answer (RFC 9457).
PROBLEM_MEDIA_TYPE = "application/problem+json"


class ProblemDetails(BaseModel):
    """Every 4xx and 5xx of the API, as RFC 9457 problem details (``application/problem+json``).

    ``type`` names the kind of problem (``about:blank`` when the HTTP status says it all);
    ``problems`` and ``problems_truncated`` are extension members: a rejected batch's
    problems by line number, field and reason."""

    type: str = Field(
        default="about:blank",
        description="a URI naming the kind of problem; about:blank: the status says it all",
    )
    title: str = Field(description="a short summary of the kind of problem")
    status: int = Field(description="the HTTP status code")
    detail: str | None = Field(default=None, description="what went wrong in this occurrence")
    problems: list[Problem] = Field(
        default_factory=list, description="extension: the problems by line, field and reason"
    )
    problems_truncated: bool = Field(
        default=False, description="extension: true when more problems exist than are listed"
    )


class UploadGrant(BaseModel):
    """The answer to ``POST /uploads``: where to upload one batch file, until when."""

    upload_url: str = Field(
        description="write-only URL of one blob (a SAS URL on Azure storage; relative on the "
        "embedded backend unless BILLING_PUBLIC_BASE_URL is set)"
    )
    blob: str = Field(description='the name to send to POST /batches as {"upload": blob}')
    expires_at: datetime = Field(description="after this the URL writes nothing")


class UploadReference(BaseModel):
    """``POST /batches``'s body when the batch file was uploaded to storage first."""

    model_config = {"extra": "forbid"}

    upload: str = Field(
        pattern=r"^[A-Za-z0-9_.-]{1,128}$", description="the blob of a POST /uploads grant"
    )
    content_type: str | None = Field(
        default=None, description="the file's Content-Type (unset: sniffed, as for a body)"
    )
    content_encoding: str | None = Field(
        default=None, description="gzip if the file is gzip (unset: sniffed)"
    )
