"""An uploaded blob as a batch body: the same blocks, limit and hash as a request body.

:class:`BlobBody` is a :class:`~initiator.body.RequestBody` read from storage
(``BlobContainer.read_blocks``, one block at a time) instead of from the client, so the
intake that follows (validation, chunking, control totals, idempotency) is the one
``POST /batches`` runs on a request body, block for block.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator

import anyio
from starlette.requests import ClientDisconnect

from initiator.body import BodyTooLargeError


class BlobBody:
    """The blob's blocks, counted against ``limit`` (413) and hashed as they pass."""

    def __init__(self, blocks: Iterable[bytes], *, limit: int) -> None:
        self._blocks = blocks
        self._limit = limit
        self._sha256 = hashlib.sha256()
        self._client_gone = threading.Event()
        self.bytes_read = 0
        self.received_whole = anyio.Event()
        """The request (``{"upload": …}``) was read whole before this body was made."""
        self.received_whole.set()

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()

    def __iter__(self) -> Iterator[bytes]:
        for block in self._blocks:
            self.bytes_read += len(block)
            if self.bytes_read > self._limit:
                raise BodyTooLargeError(self._limit)
            self._sha256.update(block)
            yield block

    def drain(self) -> None:
        for _ in self:
            pass

    def client_gone(self) -> None:
        self._client_gone.set()

    def checkpoint(self) -> None:
        """Raise ``ClientDisconnect`` once the client has hung up (called while parsing)."""
        if self._client_gone.is_set():
            raise ClientDisconnect()
