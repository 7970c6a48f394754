"""Tells the storage :class:`~shared.outage.OutageClock` how batch requests end.

A pure ASGI wrapper (not ``BaseHTTPMiddleware``, which would sit in the way of a streamed
upload): a request under ``/batches`` answered below 500 reached storage, so storage is
up; the storage-unavailable error handler (:mod:`initiator.errors`) reports the failures.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.outage import OutageClock

STORAGE_PATHS = "/batches"


class StorageSuccesses:
    """Reports to the app's ``state.storage_outage`` (read per request, like the handler)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope["path"]).startswith(STORAGE_PATHS):
            await self.app(scope, receive, send)
            return

        clock: OutageClock = scope["app"].state.storage_outage

        async def watching_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 500:
                clock.succeeded()
            await send(message)

        await self.app(scope, receive, watching_send)
