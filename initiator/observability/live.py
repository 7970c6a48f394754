"""What the live dashboard and ``billing top`` show: the latest reading and the new samples.

Every figure carries its age: the reading's ``age_seconds`` (since the sampler took it),
each processor's ``beat_age_seconds`` (since its heartbeat, as of now) and each sample's
``taken_at``. A running batch's throughput is what it has applied so far over the time
since it was received; a closed one's is its end-to-end figure.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from initiator.observability.fleet import ProcessorInstance
from initiator.observability.history import Sample
from initiator.observability.rates import applied_transactions
from initiator.observability.sampler import Reading
from initiator.schemas import BatchStatusView, GateState
from shared.contracts.batch_status import BatchStatus
from shared.domain.priority import PRIORITIES, Priority
from shared.listener.source import poison_queue
from shared.settings import Settings


class QueueInfo(BaseModel):
    name: str
    kind: Literal["work", "poison", "results"]
    priority: Priority | None = None
    partition: int | None = None


class BatchProgress(BaseModel):
    batch: BatchStatusView
    applied_transactions: float = Field(description="estimated from the chunks applied")
    elapsed_seconds: float = Field(
        description="end to end once closed; until then, since the batch was received"
    )
    processing_seconds: float = Field(
        default=0.0, description="elapsed_seconds without the time waiting for the release"
    )
    transactions_per_second: float | None = Field(
        description="applied (running) or processed (closed) transactions per second, over "
        "processing_seconds: the time waiting for the release does not count"
    )


class LiveView(BaseModel):
    generated_at: datetime
    age_seconds: float = Field(description="how old the reading is (the sampler took it then)")
    sample_seconds: float = Field(description="seconds between samples")
    gate: GateState = Field(
        default="released", description="the release gate: held, processors take no work"
    )
    window_seconds: float = Field(description="how far back the samples go, at most")
    batch_counts: dict[BatchStatus, int]
    batches: list[BatchProgress] = Field(description="the most recent batches, newest first")
    processors: list[ProcessorInstance] = Field(
        description="live processor instances; beat_age_seconds as of generated_at"
    )
    queues: list[QueueInfo] = Field(description="every queue the samples measure")
    samples: list[Sample] = Field(description="samples after the 'after' asked for, oldest first")


def queue_infos(settings: Settings) -> list[QueueInfo]:
    """The work queues (by priority and partition), their poison queues, then the results."""
    work = [
        QueueInfo(name=settings.work_queue(p, n), kind="work", priority=p, partition=n)
        for p in PRIORITIES
        for n in range(settings.partitions)
    ]
    poison = [
        QueueInfo(
            name=poison_queue(q.name), kind="poison", priority=q.priority, partition=q.partition
        )
        for q in work
    ]
    return [*work, *poison, QueueInfo(name=settings.output_queue, kind="results")]


def progress(batch: BatchStatusView, now: datetime) -> BatchProgress:
    applied = applied_transactions(batch)
    timings = batch.timings
    closed = timings.end_to_end_seconds
    if closed is not None:
        return BatchProgress(
            batch=batch,
            applied_transactions=applied,
            elapsed_seconds=closed,
            processing_seconds=timings.processing_seconds or closed,
            transactions_per_second=timings.processing_throughput or timings.throughput,
        )
    elapsed = max((now - timings.received_at).total_seconds(), 0.0)
    processing = max(elapsed - timings.waiting_for_release_seconds, 0.0)
    return BatchProgress(
        batch=batch,
        applied_transactions=applied,
        elapsed_seconds=elapsed,
        processing_seconds=processing,
        transactions_per_second=applied / processing if processing > 0 else None,
    )


def live_view(
    reading: Reading,
    samples: list[Sample],
    queues: list[QueueInfo],
    *,
    now: datetime,
    sample_seconds: float,
    window_seconds: float,
) -> LiveView:
    age = max((now - reading.sample.taken_at).total_seconds(), 0.0)
    return LiveView(
        generated_at=now,
        age_seconds=age,
        sample_seconds=sample_seconds,
        gate="released" if reading.gate_released else "held",
        window_seconds=window_seconds,
        batch_counts=reading.batches.counts,
        batches=[progress(batch, now) for batch in reading.batches.recent],
        processors=[
            p.model_copy(update={"beat_age_seconds": p.beat_age_seconds + age})
            for p in reading.processors
        ],
        queues=queues,
        samples=samples,
    )
