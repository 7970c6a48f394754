"""Where the spans, metrics and logs go: Azure Monitor, an OTLP endpoint, or nowhere.

* ``APPLICATIONINSIGHTS_CONNECTION_STRING`` set: Azure Monitor, through Microsoft's
  distribution (``azure-monitor-opentelemetry``, the image's ``azure-monitor`` extra), which
  sets up the three signals itself, logs included (its handler on the root logger).
* else ``OTEL_EXPORTER_OTLP_ENDPOINT`` set: the OpenTelemetry SDK with its OTLP/HTTP
  exporters for spans, metrics and logs (the ``otlp`` extra), which read the endpoint and
  the other ``OTEL_*`` variables themselves; the logs reach the SDK through the handler of
  ``opentelemetry-instrumentation-logging``.
* neither: nothing is configured; the spans of :mod:`shared.tracing` and the instruments of
  :mod:`shared.otel_metrics` record nothing.

Whenever something is exported, each log record written inside a span carries the span's
trace id and span id (``otelTraceID``, ``otelSpanID``: the logging instrumentation's record
attributes), for the stderr format of :mod:`shared.telemetry` and the exported records.

``OTEL_SERVICE_NAME`` names the role (the Bicep sets it per app); Azure Monitor shows it
as the cloud role name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Literal

log = logging.getLogger(__name__)

Export = Literal["azure-monitor", "otlp", "none"]


def configure_export(environ: Mapping[str, str] = os.environ) -> Export:
    """Set up the export the environment asks for; returns which one is on."""
    if environ.get("APPLICATIONINSIGHTS_CONNECTION_STRING"):
        return _azure_monitor()
    if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return _otlp()
    return "none"


def correlate_logs(*, export_handler: bool) -> None:
    """Give every log record the ids of the span it is written in (``otelTraceID``,
    ``otelSpanID``; ``0`` outside a span); with ``export_handler``, also send the records to
    the global logger provider (a handler on the root logger)."""
    from opentelemetry.instrumentation.logging import LoggingInstrumentor

    LoggingInstrumentor().instrument(
        inject_trace_context=True, enable_log_auto_instrumentation=export_handler
    )


def _azure_monitor() -> Export:
    try:
        from azure.monitor.opentelemetry import configure_azure_monitor
    except ImportError:
        log.warning(
            "APPLICATIONINSIGHTS_CONNECTION_STRING is set but azure-monitor-opentelemetry "
            "is not installed: pip install 'billing-mapreduce[azure-monitor]'"
        )
        return "none"
    configure_azure_monitor()
    correlate_logs(export_handler=False)  # the distribution has its own handler
    return "azure-monitor"


def _otlp() -> Export:
    try:
        from opentelemetry import _logs, metrics, trace
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed: "
            "pip install 'billing-mapreduce[otlp]'"
        )
        return "none"
    resource = Resource.create()  # reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    # Each provider flushes what it holds when the process exits.
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    # Every OTEL_METRIC_EXPORT_INTERVAL (60 s by default), and once more at exit.
    reader = PeriodicExportingMetricReader(OTLPMetricExporter())
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader], resource=resource))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    _logs.set_logger_provider(logger_provider)
    correlate_logs(export_handler=True)
    return "otlp"
