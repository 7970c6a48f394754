"""The export the environment asks for: spans, metrics and logs reach an OTLP endpoint over
HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, and nothing is configured when no variable
is; a log line written inside a span names the span, on stderr and in the exported record.

The OTLP case runs a role's set-up (:func:`shared.telemetry.configure_logging`) in a child
process (a process sets its providers once) against a real HTTP server in the test that
keeps what it is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.telemetry_export import configure_export

CHILD = """
import logging
from opentelemetry import trace
from shared import meter
from shared.telemetry import configure_logging
from shared.tracing import BATCH_ID, span
configure_logging()
print(trace.get_tracer_provider().__class__.__name__)
meter.record("queue", "get", 3)
with span("otlp probe", attributes={BATCH_ID: "batch-for-otlp"}) as probe:
    logging.getLogger("billing.probe").info("rating a chunk of the probe")
    context = probe.get_span_context()
    print(format(context.trace_id, "032x"), format(context.span_id, "016x"))
"""


class Collector(ThreadingHTTPServer):
    received: list[tuple[str, bytes]]


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector(("127.0.0.1", 0), _Handler)
    server.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def without_export_variables() -> dict[str, str]:
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OTEL_") and key != "APPLICATIONINSIGHTS_CONNECTION_STRING"
    }


def test_no_variable_no_export() -> None:
    assert configure_export({}) == "none"


def test_spans_metrics_and_correlated_logs_reach_the_otlp_endpoint(collector: Collector) -> None:
    env = without_export_variables()
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{collector.server_address[1]}"
    env["OTEL_SERVICE_NAME"] = "billing-processor"
    child = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr
    provider, ids = child.stdout.strip().splitlines()
    assert provider == "TracerProvider"  # the SDK's: the OTLP export is on
    trace_id, span_id = ids.split()

    def sent(signal: str) -> bytes:
        bodies = [body for path, body in collector.received if path == f"/v1/{signal}"]
        assert bodies, collector.received
        return b"".join(bodies)

    traces = sent("traces")
    assert b"otlp probe" in traces
    assert b"batch-for-otlp" in traces
    assert b"billing-processor" in traces
    # The storage-request meter, as the counter of shared.otel_metrics.
    metrics = sent("metrics")
    assert b"billing.storage.requests" in metrics
    assert b"queue.get" in metrics
    # The log line names its span, in the stderr format and in the exported record.
    assert "Logging error" not in child.stderr
    [line] = [line for line in child.stderr.splitlines() if "rating a chunk" in line]
    assert f"billing.probe [trace={trace_id} span={span_id}]: rating a chunk" in line
    logs = sent("logs")
    assert b"rating a chunk of the probe" in logs
    assert bytes.fromhex(trace_id) in logs
    assert bytes.fromhex(span_id) in logs


def test_without_export_the_log_lines_are_plain() -> None:
    env = without_export_variables()
    child = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines()[0] != "TracerProvider"  # the API's no-op one
    [line] = [line for line in child.stderr.splitlines() if "rating a chunk" in line]
    assert "billing.probe: rating a chunk of the probe" in line
    assert "trace=" not in child.stderr
