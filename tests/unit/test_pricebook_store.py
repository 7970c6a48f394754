"""Pricebook versions in the control container and the ETag-guarded ``current`` pointer."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from shared.domain.pricebook import Pricebook, PricebookError, sample_pricebook
from shared.domain.pricebook_store import (
    CURRENT_BLOB,
    NoPricebookError,
    PricebookStore,
    version_blob,
)
from shared.storage.ports import BlobProperties
from tests.support.memory_blobs import MemoryBlobContainer


def _variant(price: str) -> bytes:
    document = json.loads(sample_pricebook().to_json())
    document["skus"]["SEAT-PRO"]["unit_price"] = price
    return json.dumps(document).encode()


def test_nothing_installed_is_a_clear_error() -> None:
    with pytest.raises(NoPricebookError, match="upload one"):
        PricebookStore(MemoryBlobContainer()).current()


def test_the_sample_is_installed_only_when_none_is_current() -> None:
    container = MemoryBlobContainer()
    store = PricebookStore(container)
    assert store.install_if_missing(sample_pricebook())
    uploaded = store.upload(_variant("31.99"))
    assert not store.install_if_missing(sample_pricebook())
    assert store.current_version() == uploaded


def test_upload_stores_a_version_and_makes_it_current() -> None:
    container = MemoryBlobContainer()
    store = PricebookStore(container)
    store.install_if_missing(sample_pricebook())

    version = store.upload(_variant("31.99"))

    current_version, current = store.current()
    assert current_version == version == current.version_hash()
    assert current.unit_price_minor("SEAT-PRO") == 3199
    # The old version stays readable: batches pinned to it are rated with it.
    assert store.get(sample_pricebook().version_hash()).unit_price_minor("SEAT-PRO") == 2999
    assert container.get(version_blob(version)).data == current.to_json()


def test_an_invalid_upload_changes_nothing_and_says_everything() -> None:
    container = MemoryBlobContainer()
    store = PricebookStore(container)
    store.install_if_missing(sample_pricebook())
    blobs_before = [blob.name for blob in container.list()]

    with pytest.raises(PricebookError) as rejected:
        store.upload(b'{"currency": "usd", "skus": {"A": {"unit_price": 1.5}}, "regions": {}}')

    assert len(rejected.value.problems) >= 3
    assert [blob.name for blob in container.list()] == blobs_before
    assert store.current_version() == sample_pricebook().version_hash()


def test_versions_are_read_once_then_cached() -> None:
    container = MemoryBlobContainer()
    PricebookStore(container).upload(_variant("31.99"))
    fresh = PricebookStore(container)
    version = fresh.current_version()
    gets = container.gets

    fresh.get(version)
    fresh.get(version)

    assert container.gets == gets + 1


class RacingContainer(MemoryBlobContainer):
    """Runs a rival upload between our read of the pointer and our conditional write."""

    def __init__(self) -> None:
        super().__init__()
        self.rival: bytes | None = None
        self.pointer_writes = 0

    def put(
        self,
        blob: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> BlobProperties:
        if blob == CURRENT_BLOB:
            self.pointer_writes += 1
        if blob == CURRENT_BLOB and if_match is not None and self.rival is not None:
            rival, self.rival = self.rival, None
            PricebookStore(self).upload(rival)
        return super().put(
            blob, data, if_match=if_match, create_only=create_only, metadata=metadata
        )


def test_a_concurrent_upload_makes_the_pointer_write_retry() -> None:
    container = RacingContainer()
    store = PricebookStore(container)
    store.install_if_missing(sample_pricebook())
    container.rival = _variant("40.00")

    ours = store.upload(_variant("31.99"))

    assert store.current_version() == ours
    # install, our failed conditional write, the rival's write, our retry.
    assert container.pointer_writes == 4
    rival_version = store.get(ours)  # both versions are stored
    assert rival_version.unit_price_minor("SEAT-PRO") == 3199


def test_a_stored_version_is_checked_against_its_hash() -> None:
    container = MemoryBlobContainer()
    store = PricebookStore(container)
    version = store.upload(_variant("31.99"))
    tampered = container.get(version_blob(version)).data.replace(b'"31.99"', b'"32.99"')
    container.put(version_blob(version), tampered)

    with pytest.raises(PricebookError, match="does not match its hash"):
        PricebookStore(container).get(version)


def test_a_version_spelled_otherwise_is_checked_by_its_canonical_form() -> None:
    container = MemoryBlobContainer()
    version = sample_pricebook().version_hash()
    respelled = json.dumps(json.loads(sample_pricebook().to_json()), indent=2).encode()
    container.put(version_blob(version), respelled)

    assert PricebookStore(container).get(version).version_hash() == version


def test_a_canonical_version_is_checked_by_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Serializing a large pricebook again costs more than loading it: the stored bytes,
    canonical JSON, are what is hashed."""
    container = MemoryBlobContainer()
    version = PricebookStore(container).upload(_variant("31.99"))

    def refuse(self: Pricebook) -> bytes:
        raise AssertionError("re-serialized a canonical document to check it")

    monkeypatch.setattr(Pricebook, "to_json", refuse)
    assert PricebookStore(container).get(version).unit_price_minor("SEAT-PRO") == 3199
