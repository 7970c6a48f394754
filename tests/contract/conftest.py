"""One storage contract, two backends: each test runs on ``embedded`` and on ``azurite``.

Anything the embedded backend does that Azure (here Azurite) would not is a bug, and the
other way round: the same test, the same assertions, no backend-specific branches.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.settings import Settings
from shared.storage.ports import BlobContainer, Queue, StorageAccount, Table
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name


def azurite_settings(azurite: AzuriteInfo) -> Settings:
    """Settings for Azurite with a very short retry back-off (a test never waits 15 s)."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]  # pydantic-settings' own init keyword
        storage_connection_string=azurite.connection_string,  # type: ignore[arg-type]
        storage_retry_total=3,
        storage_retry_backoff_seconds=0.05,
    )


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageAccount]:
    account: StorageAccount
    if request.param == "azurite":
        from shared.storage.azure import AzureStorageAccount

        azurite: AzuriteInfo = request.getfixturevalue("azurite")
        account = AzureStorageAccount.from_settings(azurite_settings(azurite))
    else:
        from shared.storage.embedded import EmbeddedStorageAccount

        account = EmbeddedStorageAccount(tmp_path / "storage")
    try:
        yield account
    finally:
        account.close()


@pytest.fixture
def queue(storage: StorageAccount) -> Iterator[Queue]:
    """A fresh queue, deleted afterwards: Azurite slows down as messages pile up."""
    created = storage.queue(unique_name("q"))
    created.create()
    try:
        yield created
    finally:
        created.delete_queue()


@pytest.fixture
def container(storage: StorageAccount) -> BlobContainer:
    created = storage.container(unique_name("c"))
    created.create()
    return created


@pytest.fixture
def table(storage: StorageAccount) -> Table:
    created = storage.table(unique_name("t"))
    created.create()
    return created
