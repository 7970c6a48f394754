"""``GET /healthz`` (liveness) and ``GET /readyz`` (readiness) for a worker role, so that a
container platform can probe it.

The initiator answers probes on its API port. The processor and the controller serve no
HTTP, and Container Apps probes speak HTTP or TCP only, so with ``BILLING_HEALTH_PORT`` set
they answer here, from the role's :class:`~shared.role_health.RoleHealth` (the probe that
also gates the liveness file), on a daemon thread that stops with the process:

* ``200 ok`` while the role's probe says it is well;
* ``503`` and the reason, one line, while it does not (a worker process dead, the
  controller's listener stopped), and ``503 stopping`` once the role stops;
* ``200 starting`` before the role has registered its probe (see :func:`answer`);
* ``404`` for any other path.

``/readyz`` answers from :meth:`~shared.role_health.RoleHealth.readiness`: ``503`` also while
the role cannot work for a reason a restart would not cure (the controller's warehouse
unreachable) and while it is starting.

The endpoint starts before the role waits for its dependencies. Probes come every few
seconds: each asks the probe once and writes no log line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from shared.closing import Closing
from shared.role_health import RoleHealth, Status

log = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"


def answer(status: Status) -> HTTPStatus:
    """The HTTP status a probe of a role in ``status`` gets.

    A role still starting answers 200: it may wait up to ``BILLING_STARTUP_TIMEOUT_SECONDS``
    (300 s by default) for its dependencies, then exit naming the one that never came,
    whereas the liveness probe in ``infra/modules/app.bicep`` (10 s initial delay, every
    30 s, 3 failures) would restart a replica that failed it after about 100 s — into the
    same wait, with no such message. Readiness (:data:`READY_PATH`) is stricter.
    """
    if status.state in ("well", "starting"):
        return HTTPStatus.OK
    return HTTPStatus.SERVICE_UNAVAILABLE


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], health: RoleHealth) -> None:
        super().__init__(address, _Handler)
        self.health = health


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == HEALTH_PATH:
            status = self.server.health.status()
            code, body = answer(status), f"{status.reason}\n"
        elif path == READY_PATH:
            status = self.server.health.readiness()
            ok = HTTPStatus.OK if status.well else HTTPStatus.SERVICE_UNAVAILABLE
            code, body = ok, f"{status.reason}\n"
        else:
            code, body = HTTPStatus.NOT_FOUND, "not found\n"
        encoded = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)

    def log_message(self, format: str, *args: object) -> None:
        """Probes come every few seconds: not worth a log line each."""


class HealthEndpoint(Closing):
    """Serves :data:`HEALTH_PATH` from ``health`` on ``host:port``, on a daemon thread,
    until closed."""

    def __init__(self, port: int, health: RoleHealth, host: str = "0.0.0.0") -> None:
        self._server = _Server((host, port), health)
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
def health_endpoint(
    port: int | None, health: RoleHealth, host: str = "0.0.0.0"
) -> Iterator[HealthEndpoint | None]:
    """A :class:`HealthEndpoint` for the duration of the block, or nothing without a port."""
    if port is None:
        yield None
        return
    with HealthEndpoint(port, health, host) as endpoint:
        yield endpoint
