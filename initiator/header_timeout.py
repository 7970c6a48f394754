"""uvicorn's HTTP/1.1 protocol with a deadline on a request's headers.

uvicorn bounds the wait *between* requests (``timeout_keep_alive``) but not the headers of
one: a client that sends ``POST /batches HTTP/1.1`` and then a byte a minute holds its
connection forever. Here the headers must be complete ``header_timeout`` seconds after the
connection opens or, on a kept-alive connection, after the next request's first byte; else
the server answers ``408`` and closes. Only the arming and disarming of a timer is added;
uvicorn's own handling of everything else is untouched.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

_TIMEOUT_BODY = b"the request headers were not complete in time\n"
TIMEOUT_ANSWER = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _TIMEOUT_BODY
)


class HeaderTimeoutProtocol(H11Protocol):
    """H11Protocol whose connections get ``header_timeout`` seconds to send headers."""

    header_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._between_requests():
            self._arm()  # the first byte of a request: its headers are now due
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a request's headers are complete
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._time_out)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _time_out(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(TIMEOUT_ANSWER)
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class for one server (uvicorn takes a class, not an instance)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})
