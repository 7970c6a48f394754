"""The request body, pulled block by block by the worker thread that parses it.

Parsing is synchronous and CPU-bound, so it runs in a worker thread (``anyio.to_thread``)
while the event loop keeps serving other requests. The thread pulls the body through
:class:`BlockingBody`: each pull runs a coroutine on the event loop
(``anyio.from_thread.run``) that reads from Starlette's ``request.stream()`` until it has
about ``block_size`` bytes. So the body is never held whole, back-pressure is natural (the
loop reads only as fast as the parser asks), and the thread/loop hop is paid once per block
rather than once per network read.

On the way it counts the bytes against the size limit (413) and hashes them: the sha256 of
the body as sent identifies it for ``Idempotency-Key``. Each read waits as long as its
:class:`~initiator.body_pace.BodyPace` allows (408 after that). Once the whole body is in,
nothing reads from the client any more, so a hang-up is only noticed by a watcher on the
event loop (:mod:`initiator.disconnect`): it calls :meth:`BlockingBody.client_gone`, and the
parser's next :meth:`~BlockingBody.checkpoint` stops the intake.

Next step (docs/walkthrough.md): ``initiator.intake.reader``, which parses what this pulls
(or ``initiator.segmented_read`` with intake helpers).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

import anyio
import anyio.from_thread
from starlette.requests import ClientDisconnect

from initiator.body_pace import BodyPace

DEFAULT_BLOCK_SIZE = 1024 * 1024


class BodyTooLargeError(Exception):
    """The body grew past the limit (413); reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body exceeds the limit of {limit:,} bytes")
        self.limit = limit


class BodyTimeoutError(Exception):
    """The client stopped sending the body, or sends it too slowly (408)."""

    def __init__(self, pace: BodyPace) -> None:
        super().__init__(pace.describe())


class RequestBody(Protocol):
    """What the acceptance needs of a body: its blocks, and afterwards its size and hash."""

    bytes_read: int

    @property
    def sha256(self) -> str: ...

    def __iter__(self) -> Iterator[bytes]: ...

    def drain(self) -> None: ...


class BlockingBody:
    """An iterable of body blocks for a worker thread started by ``anyio.to_thread``."""

    def __init__(
        self,
        stream: AsyncIterator[bytes],
        *,
        limit: int,
        pace: BodyPace,
        block_size: int = DEFAULT_BLOCK_SIZE,
    ) -> None:
        self._stream = stream
        self._limit = limit
        self._pace = pace
        self._block_size = block_size
        self._sha256 = hashlib.sha256()
        self._ended = False
        self._client_gone = threading.Event()
        self.bytes_read = 0
        self.received_whole = anyio.Event()
        """Set on the event loop once the last byte of the body has been read."""

    @property
    def sha256(self) -> str:
        """Hex digest of the bytes read so far (all of them once iteration has ended)."""
        return self._sha256.hexdigest()

    def __iter__(self) -> Iterator[bytes]:
        while not self._ended:
            block = anyio.from_thread.run(self._next_block)
            if not block:
                return
            self.bytes_read += len(block)
            if self.bytes_read > self._limit:
                raise BodyTooLargeError(self._limit)
            self._sha256.update(block)
            yield block

    def drain(self) -> None:
        """Read (and hash) the rest of the body without keeping it."""
        for _ in self:
            pass

    def client_gone(self) -> None:
        """The client hung up after sending the body (thread-safe)."""
        self._client_gone.set()

    def checkpoint(self) -> None:
        """Raise ``ClientDisconnect`` once the client has hung up (called while parsing)."""
        if self._client_gone.is_set():
            raise ClientDisconnect()

    async def _next_block(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        while size < self._block_size:
            try:
                part = await self._next_part()
            except StopAsyncIteration:
                self._ended = True
                self.received_whole.set()
                break
            if part:
                parts.append(part)
                size += len(part)
        return b"".join(parts)

    async def _next_part(self) -> bytes:
        wait = self._pace.next_wait()
        if wait <= 0:
            raise BodyTimeoutError(self._pace)
        started = time.monotonic()
        part = b""
        try:
            with anyio.fail_after(wait):
                part = await anext(self._stream)
        except TimeoutError:
            raise BodyTimeoutError(self._pace) from None
        finally:
            self._pace.record(waited=time.monotonic() - started, received=len(part))
        return part
