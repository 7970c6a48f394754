"""HTTP-level counters: requests by route and status, and their durations.

A plain ASGI middleware rather than ``BaseHTTPMiddleware``, so that ``POST /batches`` keeps
streaming its body untouched. The route label is the matched route's *template*
(``/batches/{batch_id}``), never the raw path, so the number of series stays bounded; a
static file is counted under its mount (``/static``), a 404 of an unknown path as
:data:`UNMATCHED`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Buckets for request durations, in seconds: fast reads up to a large batch upload.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
#: The route label of a request that matched no route (a 404 for an unknown path).
UNMATCHED = "unmatched"


@dataclass(frozen=True)
class HttpMetrics:
    requests: Counter
    durations: Histogram

    @classmethod
    def register(cls, registry: CollectorRegistry) -> HttpMetrics:
        return cls(
            requests=Counter(
                "billing_http_requests",
                "HTTP requests answered by the initiator",
                ["method", "route", "status"],
                registry=registry,
            ),
            durations=Histogram(
                "billing_http_request_duration_seconds",
                "Time from a request's arrival to the end of its answer",
                ["method", "route"],
                buckets=DURATION_BUCKETS,
                registry=registry,
            ),
        )


class HttpMetricsMiddleware:
    """Counts every HTTP request once its answer is sent (or it failed)."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # if the app raises before it answers, the server sends a 500

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, send_and_note_status)
        finally:
            route = _route_of(scope)
            method = scope["method"]
            self._metrics.requests.labels(method, route, str(status)).inc()
            self._metrics.durations.labels(method, route).observe(time.perf_counter() - started)


def _route_of(scope: Scope) -> str:
    """The matched route's template, written into the scope by the router as it dispatches.
    FastAPI's router names no route for a mount: a static file is known by its endpoint,
    and the mount's path is what it added to the root path."""
    route = getattr(scope.get("route"), "path", None)
    if route is not None:
        return str(route)
    if isinstance(scope.get("endpoint"), StaticFiles):
        mount = str(scope.get("root_path", "")).removeprefix(str(scope.get("app_root_path", "")))
        return mount or "/static"
    return UNMATCHED
