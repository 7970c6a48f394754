"""An in-memory :class:`~shared.storage.ports.BlobContainer` for unit tests (one process).

It honours the parts of the contract that concurrency code depends on: a new ETag on every
write, ``if_match`` (412 → ``ResourceModifiedError``), ``create_only`` (409 →
``ResourceExistsError``) and ``ResourceNotFoundError`` for a missing blob or container.
``before_put`` lets a test run code between a caller's read and its write, to stage races.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from itertools import count

from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from shared.storage.ports import Blob, BlobProperties


class MemoryBlobContainer:
    def __init__(self, name: str = "control", *, exists: bool = True) -> None:
        self._name = name
        self._exists = exists
        self._blobs: dict[str, Blob] = {}
        self._lock = threading.Lock()
        self._etags = count(1)
        self.puts = 0
        self.gets = 0
        self.before_put: Callable[[str], object] | None = None

    @property
    def name(self) -> str:
        return self._name

    def create(self) -> None:
        self._exists = True

    def put(
        self,
        blob: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> BlobProperties:
        if self.before_put is not None:
            hook, self.before_put = self.before_put, None  # run once, outside the lock
            hook(blob)
        with self._lock:
            self.puts += 1
            self._require_container()
            current = self._blobs.get(blob)
            if create_only and current is not None:
                raise ResourceExistsError(f"blob {blob} already exists")
            if if_match is not None and (current is None or current.properties.etag != if_match):
                # Azure answers 412 for a missing blob under If-Match too.
                raise ResourceModifiedError(f"blob {blob}: condition not met")
            properties = BlobProperties(
                name=blob,
                etag=f'"0x{next(self._etags):X}"',
                size=len(data),
                last_modified=datetime.now(UTC),
                metadata=dict(metadata or {}),
            )
            self._blobs[blob] = Blob(data=bytes(data), properties=properties)
            return properties

    def get(self, blob: str) -> Blob:
        with self._lock:
            self.gets += 1
            self._require_container()
            try:
                return self._blobs[blob]
            except KeyError:
                raise ResourceNotFoundError(f"blob {blob} not found") from None

    def head(self, blob: str) -> BlobProperties:
        return self.get(blob).properties

    def list(self, prefix: str = "") -> Iterator[BlobProperties]:
        with self._lock:
            self._require_container()
            found = [b.properties for n, b in sorted(self._blobs.items()) if n.startswith(prefix)]
        return iter(found)

    def delete(self, blob: str, *, if_match: str | None = None) -> None:
        with self._lock:
            current = self._blobs.get(blob)
            if current is None:
                return
            if if_match is not None and current.properties.etag != if_match:
                raise ResourceModifiedError(f"blob {blob}: condition not met")
            del self._blobs[blob]

    def _require_container(self) -> None:
        if not self._exists:
            raise ResourceNotFoundError(f"container {self._name} not found")
