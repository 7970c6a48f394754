"""One trace per batch: spans that follow the batch's messages from role to role.

A batch crosses three processes through queues and a topic, so no in-process context can
tie its spans together. Each message that starts work elsewhere (the work item, the trigger
event, the chunk result) carries the W3C trace context of the span that sent it
(:func:`trace_context`, the ``trace`` field of :mod:`shared.contracts.messages`), and the
role that receives it opens its span as that span's child (:func:`span`).

The spans of a message's trip follow OpenTelemetry's messaging conventions: a sender opens
a ``PRODUCER`` span (:func:`producer_span`, ``messaging.operation.type`` = ``send``) and
the messages carry *its* context; the receiver's span is a ``CONSUMER`` span
(:func:`consumer_span`, ``process``) with ``messaging.system``,
``messaging.destination.name`` and the ``messaging.message.id`` of the message the
listener is handling (:func:`delivering`, set by :mod:`shared.listener.handling`).

Only the OpenTelemetry API is used here. Without an SDK configured (see
:mod:`shared.telemetry`) spans record nothing and :func:`trace_context` is empty, so the
messages are the same as without tracing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

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
    "consumer_span",
    "delivering",
    "producer_span",
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

#: OpenTelemetry's messaging attributes (semantic conventions, messaging spans).
MESSAGING_SYSTEM = "messaging.system"
DESTINATION = "messaging.destination.name"
DESTINATION_TEMPLATE = "messaging.destination.template"
OPERATION_TYPE = "messaging.operation.type"
OPERATION_NAME = "messaging.operation.name"
MESSAGE_ID = "messaging.message.id"
MESSAGE_COUNT = "messaging.batch.message_count"
#: ``messaging.system`` of the storage queues (no registered value exists for them) and of
#: the trigger topic (the registered value for Azure Service Bus).
QUEUE_SYSTEM = "azure_storage_queue"
TOPIC_SYSTEM = "servicebus"


@dataclass(frozen=True)
class Delivery:
    """The message a listener thread is handling: its queue and id."""

    queue: str
    message_id: str


_delivery: ContextVar[Delivery | None] = ContextVar("billing_delivery", default=None)


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


@contextmanager
def delivering(queue: str, message_id: str) -> Iterator[None]:
    """Inside the block, :func:`consumer_span` knows the message being handled."""
    token = _delivery.set(Delivery(queue, message_id))
    try:
        yield
    finally:
        _delivery.reset(token)


@contextmanager
def consumer_span(
    name: str,
    *,
    parent: Mapping[str, str] | None,
    system: str,
    destination: str | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> Iterator[Span]:
    """A ``CONSUMER`` span processing one message: the child of the context it carried, with
    the messaging attributes (queue and message id from :func:`delivering` if not given)."""
    delivery = _delivery.get()
    messaging: dict[str, AttributeValue] = {
        MESSAGING_SYSTEM: system,
        OPERATION_TYPE: "process",
        OPERATION_NAME: name,
    }
    where = destination or (delivery.queue if delivery else None)
    if where:
        messaging[DESTINATION] = where
    if delivery is not None:
        messaging[MESSAGE_ID] = delivery.message_id
    with span(
        name, parent=parent, kind=SpanKind.CONSUMER, attributes={**messaging, **(attributes or {})}
    ) as current:
        yield current


@contextmanager
def producer_span(
    name: str,
    *,
    system: str,
    destination: str | None = None,
    template: str | None = None,
    count: int | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
) -> Iterator[Span]:
    """A ``PRODUCER`` span sending messages (``count`` of them, to ``destination`` or to the
    queues ``template`` names): messages built inside carry its context."""
    messaging: dict[str, AttributeValue] = {
        MESSAGING_SYSTEM: system,
        OPERATION_TYPE: "send",
        OPERATION_NAME: name,
    }
    if destination:
        messaging[DESTINATION] = destination
    if template:
        messaging[DESTINATION_TEMPLATE] = template
    if count is not None:
        messaging[MESSAGE_COUNT] = count
    with span(
        name, kind=SpanKind.PRODUCER, attributes={**messaging, **(attributes or {})}
    ) as current:
        yield current
