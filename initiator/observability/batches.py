"""The batches at a glance: how many in each status, and the most recent ones.

One query reads the whole ``batch`` partition of the batches table, and both answers come
from it. Cost: one table request per 1,000 records (the service's page size), and memory
for every record while sorting. Batches arrive a few times a day (see
:mod:`shared.contracts.batch_records`), so that is a few thousand records a year, and the readers
call this through a cache (:mod:`initiator.observability.cache`), not once per request.
A fleet with far more batches would keep a separate "recent" partition keyed by inverted
time instead.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel, Field

from initiator.schemas import BatchStatusView
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.coordination.gate import GateHistory
from shared.storage.ports import Table

#: How many batches the dashboard lists.
RECENT_BATCHES = 50


class BatchOverview(BaseModel):
    """Counts of every status (zeros included) and the newest batches, newest first."""

    counts: dict[BatchStatus, int]
    recent: list[BatchStatusView] = Field(description=f"the {RECENT_BATCHES} newest batches")


def read_batch_overview(
    table: Table,
    gate: GateHistory | None = None,
    *,
    rated: Callable[[BatchRecord], int] | None = None,
    limit: int = RECENT_BATCHES,
) -> BatchOverview:
    """One query over the ``batch`` partition; counts every record, keeps the newest ``limit``
    (``gate``: the release gate, for each batch's wait for a release; ``rated``: a newest
    batch's chunks rated so far, see :mod:`~initiator.observability.rated`)."""
    records = list(BatchRecords(table).all())
    counts = Counter(record.status for record in records)
    newest = heapq.nlargest(limit, records, key=lambda record: record.received_at)
    return BatchOverview(
        counts={status: counts[status] for status in BatchStatus},
        recent=[
            BatchStatusView.of(record, gate, rated=rated(record) if rated else None)
            for record in newest
        ],
    )
