"""Each upload's name is single-use: issued with its grant, then taken by one batch.

An entity per upload in the batches table (partition ``upload``, row key = the blob's name):
``issued`` when ``POST /uploads`` hands out the grant; ``taken`` (conditionally, on its
ETag) when a ``POST /batches`` starts reading the blob, so two requests naming one upload
never make two batches; then it records the batch that took it, or that the file was
rejected. A taken upload is never read again, and the embedded route refuses to write it
again; a grant reused on Azure storage until it expires writes a blob no batch will take,
which the sweep removes (docs/uploads.md).

An intake that dies between taking the upload and its outcome leaves it ``taken`` without
an outcome: once that is older than the intake's orphan age, another request may take it.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

from shared.contracts.batch_records import utc_now
from shared.storage.ports import Entity, Table

UPLOAD_PARTITION = "upload"


class UploadState(StrEnum):
    ISSUED = "issued"
    TAKEN = "taken"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


@dataclass(frozen=True)
class UploadEntry:
    blob: str
    state: UploadState
    expires_at: datetime
    taken_at: datetime | None
    batch_id: str | None
    etag: str


class UploadUnknownError(Exception):
    """No grant was issued for this name (404)."""

    def __init__(self, blob: str) -> None:
        super().__init__(f"no upload {blob!r} was granted (POST /uploads first)")
        self.blob = blob


class UploadUsedError(Exception):
    """The upload was taken by a batch already, or is being taken (409)."""

    def __init__(self, entry: UploadEntry) -> None:
        if entry.state is UploadState.ACCEPTED:
            what = f"batch {entry.batch_id} took it"
        elif entry.state is UploadState.REJECTED:
            what = "its file was rejected"
        else:
            what = "another request is taking it"
        super().__init__(
            f"upload {entry.blob!r} was used already: {what}; ask POST /uploads for a new one"
        )
        self.entry = entry


class UploadLedger:
    def __init__(self, table: Table) -> None:
        self._table = table

    def issue(self, blob: str, expires_at: datetime) -> None:
        properties = {"state": UploadState.ISSUED.value, "expires_at": expires_at}
        self._table.insert(Entity(UPLOAD_PARTITION, blob, properties))

    def find(self, blob: str) -> UploadEntry | None:
        try:
            return _entry(self._table.get(UPLOAD_PARTITION, blob))
        except ResourceNotFoundError:
            return None

    def take(self, blob: str, stale_after: timedelta) -> UploadEntry:
        """Mark the upload taken by the caller; :class:`UploadUnknownError` or
        :class:`UploadUsedError` if it cannot be."""
        entry = self.find(blob)
        if entry is None:
            raise UploadUnknownError(blob)
        if not _takeable(entry, stale_after):
            raise UploadUsedError(entry)
        taken_at = utc_now()
        properties = {"state": UploadState.TAKEN.value, "taken_at": taken_at}
        try:
            updated = self._table.update(
                Entity(UPLOAD_PARTITION, blob, properties), if_match=entry.etag
            )
        except (ResourceModifiedError, ResourceNotFoundError):
            found = self.find(blob)  # a concurrent request took it first
            if found is None:
                raise UploadUnknownError(blob) from None
            raise UploadUsedError(found) from None
        return replace(entry, state=UploadState.TAKEN, taken_at=taken_at, etag=updated.etag)

    def settle(self, entry: UploadEntry, batch_id: str | None) -> None:
        """The taken upload's outcome: accepted as ``batch_id``, or rejected (None)."""
        state = UploadState.REJECTED if batch_id is None else UploadState.ACCEPTED
        properties: dict[str, object] = {"state": state.value}
        if batch_id is not None:
            properties["batch_id"] = batch_id
        self._table.update(Entity(UPLOAD_PARTITION, entry.blob, properties), if_match=entry.etag)

    def give_back(self, entry: UploadEntry) -> None:
        """The intake stopped for a reason that is not the file's (storage away, the client
        gone): the upload may be taken again."""
        properties = {"state": UploadState.ISSUED.value}
        # If it fails, someone took it over as stale meanwhile: theirs now.
        with suppress(ResourceModifiedError, ResourceNotFoundError):
            self._table.update(
                Entity(UPLOAD_PARTITION, entry.blob, properties), if_match=entry.etag
            )

    def all(self) -> list[UploadEntry]:
        return [_entry(entity) for entity in self._table.query(UPLOAD_PARTITION)]

    def forget(self, entry: UploadEntry) -> None:
        self._table.delete(UPLOAD_PARTITION, entry.blob, if_match=entry.etag)


def _takeable(entry: UploadEntry, stale_after: timedelta) -> bool:
    if entry.state is UploadState.ISSUED:
        return True
    return (
        entry.state is UploadState.TAKEN
        and entry.taken_at is not None
        and entry.taken_at <= utc_now() - stale_after
    )


def _entry(entity: Entity) -> UploadEntry:
    props = entity.properties
    return UploadEntry(
        blob=entity.row_key,
        state=UploadState(props["state"]),
        expires_at=props["expires_at"],
        taken_at=props.get("taken_at"),
        batch_id=props.get("batch_id"),
        etag=entity.etag,
    )
