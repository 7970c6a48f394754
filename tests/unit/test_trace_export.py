"""The trace export the environment asks for: spans reach an OTLP endpoint over HTTP when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, and nothing is configured when no variable is.

The OTLP case runs in a child process (a process sets its tracer provider once) against a
real HTTP server in the test that keeps what it is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shared.trace_export import configure_trace_export

CHILD = """
from shared.trace_export import configure_trace_export
from shared.tracing import BATCH_ID, span
print(configure_trace_export())
with span("otlp probe", attributes={BATCH_ID: "batch-for-otlp"}):
    pass
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


def test_no_variable_no_export() -> None:
    assert configure_trace_export({}) == "none"


def test_spans_reach_the_otlp_endpoint(collector: Collector) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("OTEL_") and key != "APPLICATIONINSIGHTS_CONNECTION_STRING"
    }
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{collector.server_address[1]}"
    env["OTEL_SERVICE_NAME"] = "billing-processor"
    child = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "otlp"
    traces = [body for path, body in collector.received if path == "/v1/traces"]
    assert traces, collector.received
    sent = b"".join(traces)
    assert b"otlp probe" in sent
    assert b"batch-for-otlp" in sent
    assert b"billing-processor" in sent
