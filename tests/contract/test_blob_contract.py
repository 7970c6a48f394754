"""The blob contract: whole-blob writes and reads with ETag conditions."""

from __future__ import annotations

import pytest
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

from shared.storage.ports import BlobContainer, StorageAccount
from tests.support.names import unique_name


def test_put_then_get_returns_the_bytes_metadata_and_etag(container: BlobContainer) -> None:
    written = container.put("a/one.json", b'{"x": 1}', metadata={"kind": "counter"})

    blob = container.get("a/one.json")

    assert blob.data == b'{"x": 1}'
    assert blob.properties.etag == written.etag
    assert (blob.properties.name, blob.properties.size) == ("a/one.json", 8)
    assert dict(blob.properties.metadata) == {"kind": "counter"}
    assert container.head("a/one.json").etag == written.etag


def test_every_write_changes_the_etag(container: BlobContainer) -> None:
    first = container.put("b", b"1")
    second = container.put("b", b"2")
    assert first.etag != second.etag


def test_if_match_with_the_current_etag_wins(container: BlobContainer) -> None:
    first = container.put("counter", b"0")

    second = container.put("counter", b"1", if_match=first.etag)

    assert second.etag != first.etag
    assert container.get("counter").data == b"1"


def test_if_match_with_a_stale_etag_raises_resource_modified(container: BlobContainer) -> None:
    stale = container.put("counter", b"0")
    container.put("counter", b"1")

    with pytest.raises(ResourceModifiedError):
        container.put("counter", b"2", if_match=stale.etag)
    assert container.get("counter").data == b"1"


def test_if_match_on_a_blob_deleted_since_raises_resource_modified(
    container: BlobContainer,
) -> None:
    stale = container.put("counter", b"0")
    container.delete("counter")

    with pytest.raises(ResourceModifiedError):
        container.put("counter", b"1", if_match=stale.etag)
    with pytest.raises(ResourceNotFoundError):
        container.head("counter")


def test_create_only_writes_a_new_blob_once(container: BlobContainer) -> None:
    container.put("claim", b"mine", create_only=True)

    with pytest.raises(ResourceExistsError):
        container.put("claim", b"theirs", create_only=True)
    assert container.get("claim").data == b"mine"


def test_a_missing_blob_is_not_found(container: BlobContainer) -> None:
    with pytest.raises(ResourceNotFoundError):
        container.get("missing")
    with pytest.raises(ResourceNotFoundError):
        container.head("missing")


def test_list_by_prefix_returns_only_that_prefix(container: BlobContainer) -> None:
    etags = {name: container.put(name, name.encode()).etag for name in ("r/1", "r/2", "s/1")}

    listed = list(container.list("r/"))

    assert sorted(p.name for p in listed) == ["r/1", "r/2"]
    assert {p.name: p.etag for p in listed} == {"r/1": etags["r/1"], "r/2": etags["r/2"]}
    assert {p.size for p in listed} == {3}
    assert sorted(p.name for p in container.list()) == ["r/1", "r/2", "s/1"]


def test_delete_is_idempotent(container: BlobContainer) -> None:
    container.put("gone", b"x")

    container.delete("gone")
    container.delete("gone")

    with pytest.raises(ResourceNotFoundError):
        container.get("gone")


def test_delete_with_a_stale_etag_raises_resource_modified(container: BlobContainer) -> None:
    stale = container.put("kept", b"0")
    current = container.put("kept", b"1")

    with pytest.raises(ResourceModifiedError):
        container.delete("kept", if_match=stale.etag)
    container.delete("kept", if_match=current.etag)
    assert list(container.list("kept")) == []


def test_a_missing_container_is_not_found(storage: StorageAccount) -> None:
    missing = storage.container(unique_name("c"))

    with pytest.raises(ResourceNotFoundError):
        missing.put("b", b"x")
    with pytest.raises(ResourceNotFoundError):
        missing.get("b")
    with pytest.raises(ResourceNotFoundError):
        list(missing.list())
