"""The request body, pulled block by block by the worker thread that parses it.

Parsing is synchronous and CPU-bound, so it runs in a worker thread (``anyio.to_thread``)
while the event loop keeps serving other requests. The thread pulls the body through
:class:`BlockingBody`: each pull runs a coroutine on the event loop
(``anyio.from_thread.run``) that reads from Starlette's ``request.stream()`` until it has
about ``block_size`` bytes. So the body is never held whole, back-pressure is natural (the
loop reads only as fast as the parser asks), and the thread/loop hop is paid once per block
rather than once per network read.

On the way it counts the bytes against the size limit (413) and hashes them: the sha256 of
the body as sent identifies it for ``Idempotency-Key``.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

import anyio.from_thread

DEFAULT_BLOCK_SIZE = 1024 * 1024


class BodyTooLargeError(Exception):
    """The body grew past the limit (413); reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body exceeds the limit of {limit:,} bytes")
        self.limit = limit


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
        block_size: int = DEFAULT_BLOCK_SIZE,
    ) -> None:
        self._stream = stream
        self._limit = limit
        self._block_size = block_size
        self._sha256 = hashlib.sha256()
        self._ended = False
        self.bytes_read = 0

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

    async def _next_block(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        while size < self._block_size:
            try:
                part = await anext(self._stream)
            except StopAsyncIteration:
                self._ended = True
                break
            if part:
                parts.append(part)
                size += len(part)
        return b"".join(parts)
