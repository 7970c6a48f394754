"""A reverse proxy in front of Azurite that counts every storage request, in a process of its own.

Two systems that talk to storage through different clients (the project's backends, kombu's
Azure transport in Celery's workers) are only comparable when their requests are counted
at one place, outside both: here, at the socket. The proxy forwards bytes unchanged in both
directions and reads just enough of the client's side (request line, ``Content-Length`` or
chunked framing) to count each HTTP request, named like :mod:`shared.meter` names it
(``queue.get``, ``blob.put``, …) with the same :func:`shared.meter.classify`.

It runs in its own process so that its work never competes for the GIL of whatever it
measures; :meth:`CountingProxy.snapshot` asks it for the counts so far.

``latency_ms`` holds every request that long before forwarding it, so that two systems
measured behind one proxy see the same distance to storage: loopback Azurite answers in well
under a millisecond, Azure Storage in several (docs/decisions/0040-storage-latency-at-the-proxy.md).
Requests on different connections are held concurrently, as a network would; requests on one
connection, one after the other, as HTTP/1.1 sends them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections import Counter
from collections.abc import Mapping
from multiprocessing.connection import Connection
from types import TracebackType

from billing.devtools.azurite import SERVICES, AzuriteInfo
from shared.meter import classify

_HEADER_END = b"\r\n\r\n"
_STOP, _SNAPSHOT = "stop", "snapshot"


class CountingProxy:
    """Proxies each service of an Azurite; :attr:`info` is where clients should connect."""

    def __init__(self, upstream: AzuriteInfo, *, latency_ms: float = 0.0) -> None:
        self._upstream = upstream
        self.latency_ms = latency_ms
        context = multiprocessing.get_context("spawn")
        self._control, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, upstream, latency_ms), name="counting-proxy", daemon=True
        )
        self.info: AzuriteInfo | None = None

    def start(self) -> AzuriteInfo:
        self._process.start()
        blob, queue, table = self._control.recv()
        self.info = AzuriteInfo(blob, queue, table)
        return self.info

    def snapshot(self) -> dict[str, int]:
        """Requests forwarded so far, by kind (``service.op``)."""
        self._control.send(_SNAPSHOT)
        counts: dict[str, int] = self._control.recv()
        return counts

    def stop(self) -> None:
        if self._process.is_alive():
            self._control.send(_STOP)
            self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def __enter__(self) -> CountingProxy:
        self.start()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.stop()


def _serve(control: Connection, upstream: AzuriteInfo, latency_ms: float) -> None:
    asyncio.run(_main(control, upstream, latency_ms / 1000))


async def _main(control: Connection, upstream: AzuriteInfo, latency: float) -> None:
    counts: Counter[str] = Counter()
    upstream_ports = dict(
        zip(SERVICES, (upstream.blob_port, upstream.queue_port, upstream.table_port), strict=True)
    )
    servers = []
    for service, port in upstream_ports.items():

        async def handle(
            reader: asyncio.StreamReader,
            writer: asyncio.StreamWriter,
            service: str = service,
            port: int = port,
        ) -> None:
            await _relay(reader, writer, upstream.host, port, service, counts, latency)

        servers.append(await asyncio.start_server(handle, upstream.host, 0))
    control.send([server.sockets[0].getsockname()[1] for server in servers])

    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_control() -> None:
        message = control.recv()
        if message == _SNAPSHOT:
            control.send(dict(counts))
        else:
            stopped.set()

    loop.add_reader(control.fileno(), on_control)
    await stopped.wait()
    loop.remove_reader(control.fileno())
    for server in servers:
        server.close()


async def _relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    host: str,
    port: int,
    service: str,
    counts: Counter[str],
    latency: float,
) -> None:
    try:
        server_reader, server_writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    upstream = asyncio.create_task(
        _requests(client_reader, server_writer, service, counts, latency)
    )
    downstream = asyncio.create_task(_pipe(server_reader, client_writer))
    await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
    for task in (upstream, downstream):
        task.cancel()
    for writer in (client_writer, server_writer):
        writer.close()


async def _requests(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    service: str,
    counts: Counter[str],
    latency: float,
) -> None:
    """Forward the client's requests one by one, counting each (and holding it ``latency``)."""
    while True:
        try:
            head = await reader.readuntil(_HEADER_END)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        method, target, headers = _parse_head(head)
        counts[f"{service}.{classify(service, method, target)}"] += 1
        if latency:
            await asyncio.sleep(latency)
        writer.write(head)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            await _forward_chunked(reader, writer)
        else:
            length = int(headers.get("content-length", "0"))
            if length:
                writer.write(await reader.readexactly(length))
        await writer.drain()


def _parse_head(head: bytes) -> tuple[str, str, Mapping[str, str]]:
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, target, _version = request_line.split(" ", 2)
    headers = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


async def _forward_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        size_line = await reader.readuntil(b"\r\n")
        writer.write(size_line)
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            writer.write(await reader.readuntil(b"\r\n"))  # no trailers from the Azure SDKs
            return
        writer.write(await reader.readexactly(size + 2))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
