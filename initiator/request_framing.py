"""A request that states its body's length twice is refused before its body is read.

``Content-Length`` together with ``Transfer-Encoding`` is the shape of a request-smuggling
attempt: a proxy in front may frame the body by one header and this server by the other
(RFC 9112, section 6.1). Such a request gets a ``400`` problem at once, with
``Connection: close``, instead of waiting for a chunked body that may never come.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from initiator.errors import CLOSE, problem

TITLE = "Ambiguous request framing"
DETAIL = "the request has both Content-Length and Transfer-Encoding; send one of them"


class RefuseAmbiguousFraming:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _value in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                await problem(400, TITLE, DETAIL, headers=CLOSE)(scope, receive, send)
                return
        await self.app(scope, receive, send)
