"""A blob container through azure-storage-blob, with ETag conditions.

The SDK turns a failed condition into the azure-core exception the port promises:
``If-Match`` → 412 → ``ResourceModifiedError``; ``If-None-Match: *`` → 409
``BlobAlreadyExists`` → ``ResourceExistsError``; a missing blob → ``ResourceNotFoundError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.blob import BlobBlock, ContainerClient
from azure.storage.blob import BlobProperties as SdkBlobProperties

from shared.storage.ports import READ_BLOCK_BYTES, Blob, BlobProperties, BlockData, block_length


class AzureBlobContainer:
    """One container of a storage account; see :class:`shared.storage.ports.BlobContainer`."""

    def __init__(self, client: ContainerClient) -> None:
        self._client = client

    @property
    def name(self) -> str:
        return self._client.container_name

    def create(self) -> None:
        with suppress(ResourceExistsError):
            self._client.create_container()

    def put(
        self,
        blob: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> BlobProperties:
        conditions: dict[str, Any] = {}
        if create_only:
            # IfMissing sends ``If-None-Match: *`` by itself; an ``etag`` next to it would
            # leak down to the HTTP transport as an unknown keyword.
            conditions = {"match_condition": MatchConditions.IfMissing}
        elif if_match is not None:
            conditions = {"etag": if_match, "match_condition": MatchConditions.IfNotModified}
        result = self._client.get_blob_client(blob).upload_blob(
            data, overwrite=True, metadata=dict(metadata or {}), **conditions
        )
        return BlobProperties(
            name=blob,
            etag=quoted_etag(result["etag"]),
            size=len(data),
            last_modified=result.get("last_modified"),
            metadata=dict(metadata or {}),
        )

    def get(self, blob: str) -> Blob:
        downloader = self._client.download_blob(blob)
        data = downloader.readall()
        return Blob(data=data, properties=_to_port(downloader.properties))

    def head(self, blob: str) -> BlobProperties:
        return _to_port(self._client.get_blob_client(blob).get_blob_properties())

    def read_blocks(self, blob: str, block_size: int = READ_BLOCK_BYTES) -> Iterator[bytes]:
        # One ranged GET per block, pinned to the first one's ETag, the next one fetched
        # while the caller works on this one: a reader that parses does not wait for
        # storage's round trips, holds two blocks at most and gets each as the SDK read it,
        # without a copy. (The SDK's own downloader starts with a 32 MiB GET, which a 1 MiB
        # reader would hold for long.)
        client = self._client.get_blob_client(blob)
        try:
            first = client.download_blob(offset=0, length=block_size)
        except HttpResponseError as error:
            if error.status_code == 416:  # InvalidRange: the blob is empty
                return
            raise
        data = first.readall()
        size, etag = _total_size(first.properties, len(data)), first.properties.etag

        def fetch(offset: int) -> bytes:
            ranged = client.download_blob(
                offset=offset,
                length=min(block_size, size - offset),
                etag=etag,
                match_condition=MatchConditions.IfNotModified,
            )
            return ranged.readall()

        offset = len(data)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="blob-read-ahead") as ahead:
            while True:
                following = ahead.submit(fetch, offset) if offset < size else None
                yield data
                if following is None:
                    return
                data = following.result()
                offset += len(data)

    def stage_block(self, blob: str, block_id: str, data: BlockData) -> None:
        # A file is streamed by the SDK, which also rewinds it to send it again on a retry.
        client = self._client.get_blob_client(blob)
        client.stage_block(block_id, data, length=block_length(data))

    def commit_blocks(self, blob: str, block_ids: Sequence[str]) -> BlobProperties:
        client = self._client.get_blob_client(blob)
        client.commit_block_list([BlobBlock(block_id) for block_id in block_ids])
        return _to_port(client.get_blob_properties())

    def list(self, prefix: str = "") -> Iterator[BlobProperties]:
        # The pager follows continuation tokens lazily, page after page.
        for properties in self._client.list_blobs(
            name_starts_with=prefix or None, include=["metadata"]
        ):
            yield _to_port(properties)

    def delete(self, blob: str, *, if_match: str | None = None) -> None:
        conditions: dict[str, Any] = {}
        if if_match is not None:
            conditions = {"etag": if_match, "match_condition": MatchConditions.IfNotModified}
        with suppress(ResourceNotFoundError):
            self._client.delete_blob(blob, **conditions)


def _total_size(properties: SdkBlobProperties, read: int) -> int:
    """The whole blob's size, from a ranged read's ``Content-Range`` (``bytes 0-9/10``)."""
    content_range = properties.content_range
    return int(content_range.rsplit("/", 1)[1]) if content_range else read


def quoted_etag(etag: str) -> str:
    """One spelling of an ETag whatever the call: the HTTP header form, in double quotes.

    Responses to a write or a read quote the ETag (it comes from a header); blob listings
    do not (it comes from an XML element). Callers compare ETags, so we quote both.
    """
    return etag if etag.startswith('"') else f'"{etag}"'


def _to_port(properties: SdkBlobProperties) -> BlobProperties:
    return BlobProperties(
        name=properties.name,
        etag=quoted_etag(properties.etag),
        size=properties.size,
        last_modified=properties.last_modified,
        metadata=dict(properties.metadata or {}),
    )
