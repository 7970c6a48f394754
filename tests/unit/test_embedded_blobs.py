"""Embedded blob containers: atomic puts over files, cleanup of replaced versions, listing.

Azure semantics shared with Azurite are in ``tests/contract/test_blob_contract.py``; here is
what depends on how the embedded backend stores bytes (one immutable file per version).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from azure.core.exceptions import (
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from shared import meter
from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.embedded import blob as blob_module
from shared.storage.embedded.blob import EmbeddedBlobContainer


@pytest.fixture
def container(account: EmbeddedStorageAccount) -> EmbeddedBlobContainer:
    created = account.container("payloads")
    created.create()
    return created


def blob_files(account: EmbeddedStorageAccount) -> list[Path]:
    return sorted((account.root / "blobs").iterdir())


def test_readers_never_see_half_a_blob_while_it_is_rewritten(
    container: EmbeddedBlobContainer,
) -> None:
    """Two writers alternate two 2 MiB versions; every read is one version whole."""
    versions = {b"a" * (2 << 20), b"b" * (2 << 20)}
    container.put("big", b"a" * (2 << 20))
    stop = threading.Event()
    torn: list[int] = []

    def write(data: bytes) -> None:
        while not stop.is_set():
            container.put("big", data)

    writers = [threading.Thread(target=write, args=(data,)) for data in versions]
    for writer in writers:
        writer.start()
    try:
        for _ in range(60):
            got = container.get("big")
            if got.data not in versions or got.properties.size != len(got.data):
                torn.append(len(got.data))
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert torn == []


def test_a_replaced_or_deleted_blob_leaves_no_file_behind(
    account: EmbeddedStorageAccount, container: EmbeddedBlobContainer
) -> None:
    for n in range(5):
        container.put("counter", str(n).encode())
    container.put("other", b"x")
    assert len(blob_files(account)) == 2

    container.delete("counter")
    container.delete("other")
    assert blob_files(account) == []


def test_a_refused_put_leaves_the_blob_and_no_stray_file(
    account: EmbeddedStorageAccount, container: EmbeddedBlobContainer
) -> None:
    original = container.put("b", b"original")
    with pytest.raises(ResourceExistsError):
        container.put("b", b"new", create_only=True)
    with pytest.raises(ResourceModifiedError):
        container.put("b", b"new", if_match='"0xSTALE"')

    assert container.get("b").data == b"original"
    assert container.head("b").etag == original.etag
    assert len(blob_files(account)) == 1


def test_etags_are_quoted_like_azure_and_unique(container: EmbeddedBlobContainer) -> None:
    etags = {container.put("b", b"same bytes").etag for _ in range(20)}
    assert len(etags) == 20
    assert all(etag.startswith('"0x') and etag.endswith('"') for etag in etags)


def test_if_match_on_a_missing_blob_fails_for_put_and_delete(
    container: EmbeddedBlobContainer,
) -> None:
    """HTTP's rule, which Azure follows: If-Match needs a current version to match."""
    with pytest.raises(ResourceModifiedError):
        container.put("absent", b"x", if_match='"0x1"')
    with pytest.raises(ResourceModifiedError):
        container.delete("absent", if_match='"0x1"')
    container.delete("absent")  # unconditional: already gone is fine


def test_the_wildcard_matches_any_existing_version(container: EmbeddedBlobContainer) -> None:
    container.put("b", b"1")
    assert container.put("b", b"2", if_match="*").size == 1
    container.delete("b", if_match="*")
    with pytest.raises(ResourceNotFoundError):
        container.head("b")


def test_a_container_never_created_is_not_found(account: EmbeddedStorageAccount) -> None:
    missing = account.container("never-created")
    with pytest.raises(ResourceNotFoundError, match="ContainerNotFound"):
        missing.put("b", b"x")
    with pytest.raises(ResourceNotFoundError, match="ContainerNotFound"):
        missing.get("b")
    with pytest.raises(ResourceNotFoundError, match="ContainerNotFound"):
        list(missing.list())
    missing.delete("b")  # cleanup of what is not there is not an error
    assert blob_files(account) == []


def test_list_is_sorted_by_name_and_bounded_by_the_prefix(
    container: EmbeddedBlobContainer,
) -> None:
    names = ["b/2", "a/1", "a/10", "a/2", "a0", "a/\U0010ffff", "ab", "é/1", "é0"]
    for name in names:
        container.put(name, b"")

    assert [p.name for p in container.list()] == sorted(names)
    assert [p.name for p in container.list("a/")] == ["a/1", "a/10", "a/2", "a/\U0010ffff"]
    assert [p.name for p in container.list("é")] == ["é/1", "é0"]
    assert list(container.list("zzz")) == []


def test_list_reads_page_by_page_and_counts_each_page(
    container: EmbeddedBlobContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(blob_module, "LIST_PAGE_SIZE", 3)
    names = [f"chunk-{n:02d}" for n in range(7)]
    for name in names:
        container.put(name, b"x", metadata={"n": name[-2:]})

    before = meter.snapshot()
    listed = list(container.list("chunk-"))

    assert [p.name for p in listed] == names
    assert [p.metadata["n"] for p in listed] == [name[-2:] for name in names]
    assert meter.diff(meter.snapshot(), before) == {"blob.list": 3}


@pytest.mark.parametrize("metadata", [{"bad-key": "v"}, {"1st": "v"}, {"k": "é"}])
def test_metadata_azure_cannot_carry_is_a_bad_request(
    container: EmbeddedBlobContainer, metadata: dict[str, str]
) -> None:
    with pytest.raises(HttpResponseError, match="InvalidMetadata"):
        container.put("b", b"x", metadata=metadata)


def test_last_modified_has_azure_whole_second_resolution(
    container: EmbeddedBlobContainer,
) -> None:
    written = container.put("b", b"x")
    assert written.last_modified is not None
    assert written.last_modified.microsecond == 0
    assert container.head("b").last_modified == written.last_modified
