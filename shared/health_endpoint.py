"""``GET /healthz`` for a worker role, so that a container platform can probe it.

The initiator answers probes on its API port. The processor and the controller serve no
HTTP, and Container Apps probes speak HTTP or TCP only, so with ``BILLING_HEALTH_PORT`` set
they answer here: ``200 ok`` while the process runs (liveness; a process that died or
never started gets no answer), on a daemon thread that stops with the process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from shared.closing import Closing

log = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path.split("?", 1)[0] == HEALTH_PATH
        body = b"ok\n" if found else b"not found\n"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Probes come every few seconds: not worth a log line each."""


class HealthEndpoint(Closing):
    """Serves :data:`HEALTH_PATH` on ``host:port`` from a daemon thread until closed."""

    def __init__(self, port: int, host: str = "0.0.0.0") -> None:
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="health-endpoint", daemon=True
        )
        self._thread.start()
        log.info("answering health probes on %s:%d%s", host, self.port, HEALTH_PATH)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@contextmanager
def health_endpoint(port: int | None, host: str = "0.0.0.0") -> Iterator[HealthEndpoint | None]:
    """A :class:`HealthEndpoint` for the duration of the block, or nothing without a port."""
    if port is None:
        yield None
        return
    with HealthEndpoint(port, host) as endpoint:
        yield endpoint
