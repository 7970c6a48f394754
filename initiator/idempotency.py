"""``Idempotency-Key``: the same key with the same body is the same batch, never a second one.

A key maps to the batch it created in the batches table (partition ``idempotency``, row key
= sha256 of the key, so any header value makes a valid row key). The mapping is inserted
create-only after the body was read and validated, and before the batch is enqueued: of two
concurrent requests with one key, exactly one insert succeeds; the other request removes
its own copy of the batch and answers with the winner's.

The body is identified by the sha256 of its bytes as streamed (before any gzip inflation),
so a client that retries must resend the same bytes.

Without a key, the same body sent again is refused too: a billing sender that resends a
file by mistake would bill every transaction twice. Each accepted body's sha256 maps to its
batch (partition ``body``); a body whose earlier batch is alive and was received within
``BILLING_DUPLICATE_BODY_WINDOW_SECONDS`` is answered ``409`` naming that batch, unless the
request says ``?allow_duplicate=true``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from shared.storage.ports import Entity, Table

IDEMPOTENCY_PARTITION = "idempotency"
BODY_PARTITION = "body"
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class KeyEntry:
    key_hash: str
    batch_id: str
    body_sha256: str
    etag: str


class IdempotencyKeyTakenError(Exception):
    """Another request claimed this key between our look-up and our claim."""

    def __init__(self, entry: KeyEntry) -> None:
        super().__init__(f"idempotency key already maps to batch {entry.batch_id}")
        self.entry = entry


class IdempotencyConflictError(Exception):
    """The key was used before for another request: a different body, or the same body at
    another priority (409)."""

    def __init__(self, batch_id: str, difference: str = "a different body") -> None:
        super().__init__(
            f"this Idempotency-Key was already used for batch {batch_id} with {difference}; "
            "use a new key for a new batch"
        )
        self.batch_id = batch_id


class DuplicateBodyError(Exception):
    """The same body was accepted as another batch within the window (409)."""

    def __init__(self, batch_id: str) -> None:
        super().__init__(
            f"this batch file was already accepted as batch {batch_id}; send it again with "
            "?allow_duplicate=true if it really is to be billed twice"
        )
        self.batch_id = batch_id


class IdempotencyInProgressError(Exception):
    """The key's first request is still being accepted (409 with ``Retry-After``)."""

    def __init__(self, batch_id: str) -> None:
        super().__init__(
            f"a request with this Idempotency-Key is still being accepted (batch {batch_id}); "
            "retry in a moment"
        )
        self.batch_id = batch_id


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class IdempotencyKeys:
    """The key → batch mappings in the batches table."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, key_hash: str) -> KeyEntry | None:
        try:
            entity = self._table.get(IDEMPOTENCY_PARTITION, key_hash)
        except ResourceNotFoundError:
            return None
        return _entry(entity)

    def claim(self, key_hash: str, batch_id: str, body_sha256: str) -> None:
        """Map the key to ``batch_id``; :class:`IdempotencyKeyTakenError` if already mapped."""
        entity = Entity(
            IDEMPOTENCY_PARTITION,
            key_hash,
            {"batch_id": batch_id, "body_sha256": body_sha256},
        )
        try:
            self._table.insert(entity)
        except ResourceExistsError:
            entry = self.find(key_hash)
            if entry is None:  # released again meanwhile: our claim may go ahead
                self._table.insert(entity)
                return
            raise IdempotencyKeyTakenError(entry) from None

    def release(self, key_hash: str, batch_id: str) -> None:
        """Remove the mapping if it still points at ``batch_id`` (it names a dead batch)."""
        entry = self.find(key_hash)
        if entry is None or entry.batch_id != batch_id:
            return
        # A changed ETag means it was re-claimed for another batch: not ours to delete.
        with contextlib.suppress(ResourceModifiedError):
            self._table.delete(IDEMPOTENCY_PARTITION, key_hash, if_match=entry.etag)

    # --- the same body without a key ------------------------------------------------------
    def claim_body(
        self,
        body_sha256: str,
        batch_id: str,
        *,
        is_live: Callable[[str], bool],
        allow_duplicate: bool,
    ) -> None:
        """Map the body to ``batch_id``; :class:`DuplicateBodyError` if it maps to a batch
        that ``is_live`` (accepted, or being accepted, within the window), unless
        ``allow_duplicate``. Create-only, so of two identical bodies at once one wins."""
        entity = Entity(BODY_PARTITION, body_sha256, {"batch_id": batch_id})
        for _ in range(3):  # a mapping changed by a racing request: look again
            try:
                self._table.insert(entity)
                return
            except ResourceExistsError:
                pass
            try:
                found = self._table.get(BODY_PARTITION, body_sha256)
            except ResourceNotFoundError:
                continue
            earlier = str(found.properties["batch_id"])
            if not allow_duplicate and is_live(earlier):
                raise DuplicateBodyError(earlier)
            with contextlib.suppress(ResourceModifiedError, ResourceNotFoundError):
                self._table.update(entity, if_match=found.etag, merge=False)
                return
        raise DuplicateBodyError(earlier)

    def release_body(self, body_sha256: str, batch_id: str) -> None:
        """Remove the body's mapping if it still names ``batch_id`` (a dead batch)."""
        try:
            found = self._table.get(BODY_PARTITION, body_sha256)
        except ResourceNotFoundError:
            return
        if str(found.properties["batch_id"]) == batch_id:
            with contextlib.suppress(ResourceModifiedError, ResourceNotFoundError):
                self._table.delete(BODY_PARTITION, body_sha256, if_match=found.etag)


def _entry(entity: Entity) -> KeyEntry:
    return KeyEntry(
        key_hash=entity.row_key,
        batch_id=str(entity.properties["batch_id"]),
        body_sha256=str(entity.properties["body_sha256"]),
        etag=entity.etag,
    )
