"""The trace context in messages: present inside a span, absent (same text as before
tracing existed) outside one, and read back as the receiving span's remote parent."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from shared.contracts.messages import WorkItem
from shared.tracing import span, trace_context
from tests.support.recorded_spans import recorded_spans

__all__ = ["recorded_spans"]  # the fixture


def work_item() -> WorkItem:
    return WorkItem(
        batch_id="b",
        chunk=0,
        priority="normal",
        payload_blob="b/0",
        first_line=2,
        last_line=3,
        transactions=2,
        sha256="0" * 64,
        pricebook_version="v",
        trace=trace_context(),
    )


def test_outside_a_span_a_message_has_no_trace_field(recorded_spans: InMemorySpanExporter) -> None:
    item = work_item()
    assert "trace" not in json.loads(item.to_text())
    assert WorkItem.from_text(item.to_text()) == item


def test_inside_a_span_the_message_carries_it_to_the_receivers_span(
    recorded_spans: InMemorySpanExporter,
) -> None:
    with span("send") as sent:
        text = work_item().to_text()
    received = WorkItem.from_text(text)
    assert set(received.trace) >= {"traceparent"}
    with span("receive", parent=received.trace):
        pass
    receive = next(s for s in recorded_spans.get_finished_spans() if s.name == "receive")
    assert receive.parent is not None
    assert receive.parent.is_remote
    assert receive.parent.span_id == sent.get_span_context().span_id
    assert receive.context is not None
    assert receive.context.trace_id == sent.get_span_context().trace_id
