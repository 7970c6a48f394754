"""The OpenTelemetry SDK's meter provider with an in-memory reader, for tests that read the
metrics.

A process sets its meter provider once, so the first test that asks installs it for the
rest of the test process; a collection calls the observable instruments' callbacks, so
each reading is what the state is at that moment.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

from shared import otel_metrics

_READER = InMemoryMetricReader()

#: One reading: metric name → attributes (sorted items) → value.
Reading = dict[str, dict[tuple[tuple[str, object], ...], float]]


def _install_once() -> None:
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    otel_metrics.create_instruments()


def read(reader: InMemoryMetricReader) -> Reading:
    """Collect now: every data point of this project's metrics, by name and attributes
    (other instrumentation, e.g. the HTTP server's histograms, is left out)."""
    reading: Reading = {}
    data = reader.get_metrics_data()
    assert data is not None
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            if scope_metrics.scope.name != otel_metrics.METER_NAME:
                continue
            for metric in scope_metrics.metrics:
                points = reading.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    assert isinstance(point, NumberDataPoint)
                    points[attributes_key(point.attributes or {})] = point.value
    return reading


def attributes_key(attributes: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(attributes.items()))


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    """The reader every instrument of this process reports to."""
    _install_once()
    return _READER
