"""Step 6 of publishing: one trigger event per accepted batch on the trigger topic.

The push trigger (docs/patterns.md): storage account, queue names, payload size, plus the
batch id, priority and chunk count, with the application properties ``Priority``
(subscriptions filter on it) and ``Kind`` = ``work`` (the topic also carries the release
gate's broadcasts).
"""

from __future__ import annotations

from shared.bus.ports import TriggerBus
from shared.contracts.batch_records import BatchRecord
from shared.contracts.messages import KIND_PROPERTY, PRIORITY_PROPERTY, TriggerEvent
from shared.tracing import trace_context


def trigger_event(record: BatchRecord, *, storage_account: str, queues: list[str]) -> TriggerEvent:
    return TriggerEvent(
        storage_account=storage_account,
        queue_names=queues,
        payload_size=record.payload_bytes,
        batch_id=record.batch_id,
        priority=record.priority,
        chunk_count=record.chunks,
        trace=trace_context(),
    )


def announce(
    bus: TriggerBus, record: BatchRecord, *, storage_account: str, queues: list[str]
) -> TriggerEvent:
    event = trigger_event(record, storage_account=storage_account, queues=queues)
    bus.publish(
        event.to_text().encode(),
        {PRIORITY_PROPERTY: event.priority, KIND_PROPERTY: event.kind},
    )
    return event
