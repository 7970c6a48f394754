"""The initiator on a real socket, served exactly as ``billing initiator`` serves it.

:func:`serving` runs the app under uvicorn with :func:`initiator.serving.server_config`
(header timeout, no access log) in a thread, on a free loopback port. Raw-socket helpers
play the clients that a library would never be: slow, stalled, hanging up.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from billing.demo.cluster import free_port
from initiator.app import create_app
from initiator.serving import server_config
from shared.settings import Settings

START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0
#: How long a test waits for an answer it expects: far above any timeout it configures.
ANSWER_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class LiveInitiator:
    app: FastAPI
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connect(self) -> socket.socket:
        client = socket.create_connection(("127.0.0.1", self.port), timeout=ANSWER_TIMEOUT_SECONDS)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return client


@contextmanager
def serving(settings: Settings) -> Iterator[LiveInitiator]:
    app = create_app(settings)
    port = free_port()
    config = server_config(app, settings, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="live-initiator", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not server.started:
            assert thread.is_alive(), "the initiator stopped while starting"
            assert time.monotonic() < deadline, "the initiator did not start in time"
            time.sleep(0.02)
        yield LiveInitiator(app, port)
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_TIMEOUT_SECONDS)


def request_head(
    method: str, path: str, headers: dict[str, str], *, host: str = "initiator"
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_until_closed(client: socket.socket, timeout: float = ANSWER_TIMEOUT_SECONDS) -> bytes:
    """Everything the server sends until it closes the connection (or ``timeout`` passes,
    which fails: the server was expected to close)."""
    received = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"the server did not close the connection; got {bytes(received)!r}"
        client.settimeout(left)
        try:
            data = client.recv(65536)
        except ConnectionResetError:
            return bytes(received)
        except TimeoutError:
            raise AssertionError(
                f"the server did not close the connection; got {bytes(received)!r}"
            ) from None
        if not data:
            return bytes(received)
        received += data


def answered(client: socket.socket) -> bool:
    """Whether the server has sent something (or closed) on ``client``, without waiting."""
    readable, _, _ = select.select([client], [], [], 0)
    return bool(readable)


def status_of(answer: bytes) -> int:
    """The status code of a raw HTTP/1.1 answer."""
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 "), f"not an HTTP answer: {answer[:200]!r}"
    return int(status_line.split()[1])


def header_of(answer: bytes, name: str) -> str | None:
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    for line in head.split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == name.lower():
            return value.strip()
    return None


def body_of(answer: bytes) -> bytes:
    return answer.split(b"\r\n\r\n", 1)[1]
