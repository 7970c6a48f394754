"""The block contract: blobs read as a stream, and written block by block (stage,
commit), as the upload path uses them (docs/uploads.md)."""

from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from shared.storage.ports import READ_BLOCK_BYTES, BlobContainer


def test_read_blocks_streams_the_blob_in_blocks_of_the_size_asked(
    container: BlobContainer,
) -> None:
    data = bytes(range(256)) * 41  # 10,496 bytes
    container.put("big", data)

    blocks = list(container.read_blocks("big", block_size=4096))

    assert b"".join(blocks) == data
    assert all(len(block) <= 4096 for block in blocks)
    assert len(blocks) >= 3


def test_read_blocks_reads_a_blob_larger_than_one_ranged_read(container: BlobContainer) -> None:
    data = bytes(range(251)) * (READ_BLOCK_BYTES * 2 // 251 + 7)  # past two reads of 4 MiB

    container.put("large", data)

    assert b"".join(container.read_blocks("large", block_size=1024 * 1024)) == data


def test_read_blocks_of_an_empty_blob_yields_nothing(container: BlobContainer) -> None:
    container.put("empty", b"")
    assert list(container.read_blocks("empty")) == []


def test_read_blocks_of_a_missing_blob_raises_not_found(container: BlobContainer) -> None:
    with pytest.raises(ResourceNotFoundError):
        next(iter(container.read_blocks("absent")))


def test_staged_blocks_are_committed_in_the_order_given(
    container: BlobContainer,
) -> None:
    container.stage_block("upload", "0001", b"world")
    container.stage_block("upload", "0000", b"hello ")
    with pytest.raises(ResourceNotFoundError):
        container.head("upload")  # nothing readable before the commit

    written = container.commit_blocks("upload", ["0000", "0001"])

    assert container.get("upload").data == b"hello world"
    assert (written.size, written.etag) == (11, container.head("upload").etag)


def test_staging_a_block_again_replaces_it(container: BlobContainer) -> None:
    container.stage_block("upload", "0000", b"first try")
    container.stage_block("upload", "0000", b"second")

    container.commit_blocks("upload", ["0000"])
    assert container.get("upload").data == b"second"


def test_committing_a_block_never_staged_is_refused(container: BlobContainer) -> None:
    container.stage_block("upload", "0000", b"x")

    with pytest.raises(HttpResponseError) as refused:
        container.commit_blocks("upload", ["0000", "0001"])
    assert refused.value.status_code == 400
    with pytest.raises(ResourceNotFoundError):
        container.head("upload")
