"""A loopback TCP relay that a test can cut and restore: a server that goes down and back.

    with TcpProxy("127.0.0.1", 5432) as proxy:   # listens on proxy.port
        ...                                       # clients connect through it
        proxy.cut()       # open connections reset, new ones refused (closed at once)
        proxy.restore()   # relays again

The port stays the same throughout, so clients reconnect as they would to a server that
came back.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from typing import Self

BUFFER_BYTES = 64 * 1024


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._up = threading.Event()
        self._up.set()
        self._closed = threading.Event()
        self._accepting = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)
        self._accepting.start()

    def cut(self) -> None:
        """Reset every relayed connection and refuse new ones until :meth:`restore`."""
        self._up.clear()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            _reset(sock)

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closed.set()
        self.cut()
        self._listener.close()
        self._accepting.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._up.is_set():
                _reset(client)
                continue
            try:
                server = socket.create_connection(self._upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(BUFFER_BYTES):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with self._lock:
                    self._open.discard(sock)
                _reset(sock)


def _reset(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
