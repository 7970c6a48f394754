"""How many of an open batch's chunks are rated: its result blobs, counted.

The batch record counts the chunks the controller has applied. Between a processor writing
a chunk's result and the controller applying it, that count stands still although the work
is done: a moment while the controller keeps up, longer while it catches up with a burst of
results or with a release of the gate. The results container knows what is rated now, so
a reading of an open batch lists the names under its prefix: one request (a page holds
5,000 names, more chunks than a batch has), counted as ``blob.list@status`` since it is
made for an onlooker, not the pipeline. A settled batch needs none: every chunk it rated is
applied.
"""

from __future__ import annotations

from shared import meter
from shared.contracts.batch_records import BatchRecord
from shared.contracts.batch_status import OPEN_STATUSES
from shared.contracts.chunk_result import result_blob_prefix
from shared.storage.ports import BlobContainer

#: The meter's caller for the listing (``blob.list@status``).
METER_CALLER = "status"


def rated_chunks(results: BlobContainer, record: BatchRecord) -> int:
    """Chunks rated so far, applied or waiting to be: at least the applied ones, at most
    those not failed."""
    settled = record.chunks_applied + record.chunks_failed
    if record.status not in OPEN_STATUSES or settled >= record.chunks:
        return record.chunks_applied
    with meter.on_behalf_of(METER_CALLER):
        listed = sum(1 for _ in results.list(prefix=result_blob_prefix(record.batch_id)))
    return min(max(listed, record.chunks_applied), record.chunks - record.chunks_failed)
