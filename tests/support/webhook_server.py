"""A real local HTTP server that takes webhook deliveries, failing the first few."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    """What the server was sent, and how many requests it still answers 500."""

    failures_left: int
    requests: list[tuple[dict[str, str], bytes, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def statuses(self) -> list[int]:
        with self.lock:
            return [status for _, _, status in self.requests]


@contextmanager
def webhook_server(fail_first: int = 0) -> Iterator[tuple[str, Received]]:
    """``(url, received)``: a server on 127.0.0.1 answering 500 ``fail_first`` times, then 204."""
    received = Received(failures_left=fail_first)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            with received.lock:
                status = 500 if received.failures_left > 0 else 204
                received.failures_left -= 1
                received.requests.append((dict(self.headers), body, status))
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet in test output

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/billing", received
    finally:
        server.shutdown()
        server.server_close()
