"""Step 1 of publishing: the chunk payload blobs (claim checks), written while parsing runs.

The parser hands over chunks of validated transactions as it goes. Each is turned into
its JSON document right here, on the parsing thread, and a small thread pool compresses
and uploads it, so compression (zlib drops the GIL) and storage round trips overlap with
parsing on the other core. The JSON half stays on this thread because it holds the GIL
throughout: run in the pool it only fought the parser for the GIL (measured on 200,000
transactions, the whole intake takes ~8 % more time that way than with this split).
At most ``max_in_flight`` chunks wait at a time, which bounds memory whatever the size of
the batch (a waiting chunk is its JSON document, ~100 bytes a transaction).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from shared.contracts.chunk_payload import (
    DEFAULT_COMPRESSLEVEL,
    NumberedTransaction,
    chunk_json,
    compress_chunk_json,
    payload_blob_name,
)
from shared.storage.ports import BlobContainer

DEFAULT_MAX_IN_FLIGHT = 4


@dataclass(frozen=True)
class StoredChunk:
    """What the work item for a chunk needs to know about its stored payload."""

    index: int
    blob: str
    first_line: int
    last_line: int
    transactions: int
    sha256: str
    size: int


class PayloadWriter:
    """Uploads one batch's chunk payloads; :meth:`finish` waits for them all."""

    def __init__(
        self,
        container: BlobContainer,
        batch_id: str,
        *,
        compresslevel: int = DEFAULT_COMPRESSLEVEL,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self._container = container
        self._batch_id = batch_id
        self._compresslevel = compresslevel
        self._max_in_flight = max_in_flight
        self._pool = ThreadPoolExecutor(max_in_flight, thread_name_prefix=f"payload-{batch_id}")
        self._pending: set[Future[StoredChunk]] = set()
        self._stored: list[StoredChunk] = []
        self._next_index = 0

    @property
    def chunks_started(self) -> int:
        return self._next_index

    def write(self, rows: Sequence[NumberedTransaction]) -> None:
        """Queue the next chunk for upload, first waiting if too many are in flight."""
        document = chunk_json(self._batch_id, self._next_index, rows)
        self.write_document(document, (rows[0][0], rows[-1][0], len(rows)))

    def write_document(self, document: bytes, lines: tuple[int, int, int]) -> None:
        """:meth:`write` for a chunk whose JSON document is made already (the next
        chunk's: :attr:`chunks_started`); ``lines`` is (first, last, count)."""
        while len(self._pending) >= self._max_in_flight:
            self._collect(wait(self._pending, return_when=FIRST_COMPLETED).done)
        index = self._next_index
        self._next_index += 1
        self._pending.add(self._pool.submit(self._upload, index, document, lines))

    def finish(self) -> list[StoredChunk]:
        """Wait for every upload; the first failure is raised. Chunks in index order."""
        self._collect(wait(self._pending).done)
        self._pool.shutdown()
        return sorted(self._stored, key=lambda chunk: chunk.index)

    def discard(self) -> None:
        """Delete every payload blob of the batch, including any an upload left half-known.

        Uploads still queued are cancelled and running ones awaited, then the batch's prefix
        is listed so that a blob whose upload succeeded after its future failed (a timeout
        on the reply) is deleted too.
        """
        for future in self._pending:
            future.cancel()
        wait(self._pending)
        self._pending.clear()
        self._pool.shutdown()
        delete_payloads(self._container, self._batch_id)

    def close(self) -> None:
        """Release the upload threads (when nothing was written, or after :meth:`finish`)."""
        self._pool.shutdown(cancel_futures=True)

    def _collect(self, done: set[Future[StoredChunk]]) -> None:
        for future in done:
            self._pending.discard(future)
            self._stored.append(future.result())

    def _upload(self, index: int, document: bytes, lines: tuple[int, int, int]) -> StoredChunk:
        """Compress, store and describe one chunk; ``lines`` is (first, last, count)."""
        data = compress_chunk_json(document, compresslevel=self._compresslevel)
        blob = payload_blob_name(self._batch_id, index)
        self._container.put(blob, data)
        first_line, last_line, transactions = lines
        return StoredChunk(
            index=index,
            blob=blob,
            first_line=first_line,
            last_line=last_line,
            transactions=transactions,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
        )


def delete_payloads(container: BlobContainer, batch_id: str) -> int:
    """Delete every payload blob of ``batch_id``; returns how many there were."""
    names = [blob.name for blob in container.list(prefix=f"{batch_id}/")]
    for name in names:
        container.delete(name)
    return len(names)
