"""Where the spans go: Azure Monitor, an OTLP endpoint, or nowhere.

* ``APPLICATIONINSIGHTS_CONNECTION_STRING`` set: Azure Monitor, through Microsoft's
  distribution (``azure-monitor-opentelemetry``, the image's ``azure-monitor`` extra), which
  also sends the logs, correlated with the spans they were written in.
* else ``OTEL_EXPORTER_OTLP_ENDPOINT`` set: the OpenTelemetry SDK with its OTLP/HTTP
  exporter (the ``otlp`` extra), which reads the endpoint and the other ``OTEL_*``
  variables itself.
* neither: nothing is configured, and the spans of :mod:`shared.tracing` record nothing.

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


def configure_trace_export(environ: Mapping[str, str] = os.environ) -> Export:
    """Set up the export the environment asks for; returns which one is on."""
    if environ.get("APPLICATIONINSIGHTS_CONNECTION_STRING"):
        return _azure_monitor()
    if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return _otlp()
    return "none"


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
    return "azure-monitor"


def _otlp() -> Export:
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed: "
            "pip install 'billing-mapreduce[otlp]'"
        )
        return "none"
    provider = TracerProvider()  # its resource reads OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)  # the SDK flushes the batch at exit
    return "otlp"
