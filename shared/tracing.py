"""One trace per batch: spans that follow the batch's messages from role to role.

A batch crosses three processes through queues and a topic, so no in-process context can
tie its spans together. Each message that starts work elsewhere (the work item, the trigger
event, the chunk result) carries the W3C trace context of the span that sent it
(:func:`trace_context`, the ``trace`` field of :mod:`shared.contracts.messages`), and the
role that receives it opens its span as that span's child (:func:`span`).

Only the OpenTelemetry API is used here. Without an SDK configured (see
:mod:`shared.telemetry`) spans record nothing and :func:`trace_context` is empty, so the
messages are the same as without tracing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

__all__ = [
    "APPLIED",
    "BATCH_ID",
    "CHUNK",
    "PRIORITY",
    "TRANSACTIONS",
    "AttributeValue",
    "span",
    "trace_context",
]

TRACER_NAME = "billing"

#: Span attribute names, one place for all roles.
BATCH_ID = "billing.batch_id"
CHUNK = "billing.chunk"
PRIORITY = "billing.priority"
TRANSACTIONS = "billing.transactions"
APPLIED = "billing.applied"


def trace_context() -> dict[str, str]:
    """The current span's context as message fields (``traceparent``, maybe ``tracestate``);
    empty when nothing is being traced."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


@contextmanager
def span(
    name: str,
    *,
    parent: Mapping[str, str] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> Iterator[Span]:
    """A span, current inside the block; the child of the context ``parent`` carried (a
    message's ``trace``), or of the current span when there is none."""
    context = propagate.extract(parent) if parent else None
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name, context=context, kind=kind, attributes=attributes
    ) as current:
        yield current
