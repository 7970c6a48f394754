"""One trace per batch: the batch's ``POST /batches``, the initiator's intake, each chunk's
rating in a processor and each chunk's reduce in the controller are spans of one trace,
joined by the trace context that the work items, the trigger event and the result messages
carry.

The roles run as in the other end-to-end tests (real HTTP, each role on its own storage and
bus handles, in threads), with the OpenTelemetry SDK's in-memory exporter. Threads share no
context across a queue, so a span can only find its parent through the message: each
receiving span's parent is *remote* (extracted from a message) and is the very span that
sent the message.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from billing.sample_batches import write_batch_file
from shared.tracing import APPLIED, BATCH_ID, CHUNK, TRANSACTIONS
from tests.e2e.conftest import SettingsFactory
from tests.e2e.pipeline import running_pipeline
from tests.support.deployment_settings import EMBEDDED_STACK
from tests.support.recorded_spans import recorded_spans

__all__ = ["recorded_spans"]  # the fixture


@pytest.fixture
def stack() -> str:
    """Spans do not depend on the storage: the embedded stack is enough."""
    return EMBEDDED_STACK


CHUNK_SIZE = 40
TRANSACTIONS_IN_BATCH = 150


def spans_of(exporter: InMemorySpanExporter, name: str, batch_id: str) -> list[ReadableSpan]:
    return [
        s
        for s in exporter.get_finished_spans()
        if s.name == name and s.attributes is not None and s.attributes.get(BATCH_ID) == batch_id
    ]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "spans not finished in time"
        time.sleep(0.05)


def parent_is(child: ReadableSpan, parent: ReadableSpan) -> bool:
    """``child`` was opened from the context ``parent`` put in a message."""
    assert child.parent is not None
    assert child.context is not None
    assert parent.context is not None
    return (
        child.parent.is_remote
        and child.parent.span_id == parent.context.span_id
        and child.context.trace_id == parent.context.trace_id
    )


def messaging(span: ReadableSpan) -> dict[str, object]:
    """The span's OpenTelemetry messaging attributes."""
    return {k: v for k, v in (span.attributes or {}).items() if k.startswith("messaging.")}


def test_one_batch_is_one_trace_from_intake_through_rating_to_reduce(
    make_settings: SettingsFactory, tmp_path: Path, recorded_spans: InMemorySpanExporter
) -> None:
    settings = make_settings(chunk_size=CHUNK_SIZE)
    path = tmp_path / "batch.csv"
    write_batch_file(path, TRANSACTIONS_IN_BATCH, seed=7)
    chunks = math.ceil(TRANSACTIONS_IN_BATCH / CHUNK_SIZE)

    with running_pipeline(settings, processors=2) as pipeline:
        batch_id = pipeline.submit(path, priority="normal", headers={})["batch_id"]
        assert pipeline.wait_until_closed(batch_id)["status"] == "completed"
        # The last reduce span ends just after it closed the batch.
        wait_for(lambda: len(spans_of(recorded_spans, "reduce chunk", batch_id)) >= chunks)

    [intake] = spans_of(recorded_spans, "intake", batch_id)
    assert intake.context is not None
    trace_id = intake.context.trace_id
    in_trace = [s for s in recorded_spans.get_finished_spans() if s.context.trace_id == trace_id]
    # The root is the HTTP request's server span (FastAPI's own); intake is inside it.
    [request] = [s for s in in_trace if s.parent is None]
    assert (request.name, request.kind) == ("POST /batches", SpanKind.SERVER)
    assert intake.parent is not None
    assert not intake.parent.is_remote
    assert intake.attributes is not None
    assert intake.attributes[TRANSACTIONS] == TRANSACTIONS_IN_BATCH

    # The work items are sent in a PRODUCER span inside the intake, and carry its context.
    [send_items] = spans_of(recorded_spans, "send work items", batch_id)
    assert send_items.kind == SpanKind.PRODUCER
    assert send_items.parent is not None
    assert send_items.parent.span_id == intake.context.span_id
    expected = {
        "messaging.system": "azure_storage_queue",
        "messaging.operation.type": "send",
        "messaging.batch.message_count": chunks,
    }
    assert messaging(send_items).items() >= expected.items()

    ratings = spans_of(recorded_spans, "rate chunk", batch_id)
    assert sorted(s.attributes[CHUNK] for s in ratings if s.attributes) == list(range(chunks))
    assert all(parent_is(rating, send_items) for rating in ratings)
    for rating in ratings:
        assert rating.kind == SpanKind.CONSUMER
        attributes = dict(rating.attributes or {})
        assert attributes["messaging.operation.type"] == "process"
        assert str(attributes["messaging.destination.name"]).startswith(settings.work_queue_prefix)
        assert attributes["messaging.message.id"]

    sends = [s for s in recorded_spans.get_finished_spans() if s.name == "send result"]
    reduces = spans_of(recorded_spans, "reduce chunk", batch_id)
    assert sorted(s.attributes[CHUNK] for s in reduces if s.attributes) == list(range(chunks))
    for reduce in reduces:
        assert reduce.attributes is not None
        assert reduce.attributes[APPLIED] is True
        assert reduce.kind == SpanKind.CONSUMER
        assert reduce.attributes["messaging.destination.name"] == settings.output_queue
        [send] = [s for s in sends if parent_is(reduce, s)]
        assert send.kind == SpanKind.PRODUCER
        [rating] = [r for r in ratings if send.parent and send.parent.span_id == r.context.span_id]
        assert rating.attributes is not None
        assert rating.attributes[CHUNK] == reduce.attributes[CHUNK]

    # The trigger wakes the processors that were up, in the same trace.
    [publish] = spans_of(recorded_spans, "publish trigger", batch_id)
    assert publish.kind == SpanKind.PRODUCER
    assert messaging(publish)["messaging.system"] == "servicebus"
    triggers = spans_of(recorded_spans, "trigger", batch_id)
    assert triggers
    assert all(parent_is(trigger, publish) for trigger in triggers)
    assert all(trigger.kind == SpanKind.CONSUMER for trigger in triggers)
    assert {messaging(t)["messaging.destination.name"] for t in triggers} == {
        settings.trigger_topic
    }

    batch_spans = [request, intake, send_items, *ratings, *reduces, publish, *triggers]
    assert {s.context.trace_id for s in batch_spans if s.context} == {trace_id}
    assert all(s.status.status_code != StatusCode.ERROR for s in batch_spans)
