"""A request that states its body's length twice is refused before its body is read.

``Content-Length`` together with ``Transfer-Encoding`` is the shape of a request-smuggling
attempt: a proxy in front may frame the body by one header and this server by the other
(RFC 9112, section 6.1). Such a request gets a ``400`` at once, with ``Connection: close``,
instead of waiting for a chunked body that may never come.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

PROBLEM = {
    "title": "Ambiguous request framing",
    "status": 400,
    "detail": "the request has both Content-Length and Transfer-Encoding; send one of them",
    "problems": [],
}


class RefuseAmbiguousFraming:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {name.lower() for name, _value in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                body = json.dumps(PROBLEM).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
