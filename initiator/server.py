"""The initiator's app served by uvicorn in a thread of this process, as a role.

``billing initiator`` gives the process to uvicorn; all-in-one mode and the end-to-end
tests run the same app next to the workers, so they need it to start, stop and report like
them (:class:`shared.lifecycle.Role`).
"""

from __future__ import annotations

import threading
import time

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

from initiator.serving import server_config
from shared.settings import Settings

#: How long :meth:`InitiatorServer.start` waits for the server to listen.
START_TIMEOUT_SECONDS = 60.0


class ServerSnapshot(BaseModel):
    url: str
    serving: bool


class InitiatorServer:
    """``app`` on ``host:port``, with ``settings``' limits on clients (as
    :func:`initiator.serving.server_config` sets them); ``grace_seconds``: how long a stop
    lets requests finish."""

    def __init__(
        self,
        app: FastAPI,
        settings: Settings,
        *,
        host: str,
        port: int,
        grace_seconds: int = 1,
        log_level: str = "info",
    ) -> None:
        self.url = f"http://{host}:{port}"
        self.server = uvicorn.Server(
            server_config(
                app,
                settings,
                host=host,
                port=port,
                lifespan="on",  # a failing start-up must stop the server, not be skipped
                log_level=log_level,
                timeout_graceful_shutdown=grace_seconds,
            )
        )
        self._grace_seconds = grace_seconds
        self._thread = threading.Thread(target=self.server.run, name="initiator", daemon=True)

    @property
    def serving(self) -> bool:
        """True while the server runs (it may end on its own, e.g. on a fatal error)."""
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the HTTP server did not start (see the log above)")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the HTTP server did not start in {START_TIMEOUT_SECONDS}s")
            time.sleep(0.02)

    def stop(self, timeout: float | None = None) -> bool:
        if not self._thread.is_alive():
            return True
        self.server.should_exit = True  # uvicorn notices within 0.1 s, then stops accepting
        grace = self._grace_seconds + 1.0
        self._thread.join(grace if timeout is None else min(grace, timeout))
        return not self._thread.is_alive()

    def snapshot(self) -> ServerSnapshot:
        return ServerSnapshot(url=self.url, serving=self.serving)
