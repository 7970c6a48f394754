"""The OpenTelemetry SDK with an in-memory exporter, for tests that read the spans.

OpenTelemetry lets a process set its tracer provider once, so the first test that asks
installs it for the rest of the test process (later tests then run with spans recorded
and trace context in their messages, as a deployment with telemetry on does); each test
gets the exporter emptied.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()


def _install_once() -> None:
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)


@pytest.fixture
def recorded_spans() -> Iterator[InMemorySpanExporter]:
    """The exporter every finished span goes to, empty at the start of the test."""
    _install_once()
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
