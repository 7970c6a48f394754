"""Storage: the ports and the choice of backend from the settings."""

from __future__ import annotations

from shared.settings import Settings
from shared.storage.ports import StorageAccount


def open_storage(settings: Settings) -> StorageAccount:
    """The Azure SDK backend when a connection string or account URL is set, else embedded."""
    if settings.uses_azure_storage:
        from shared.storage.azure import AzureStorageAccount

        return AzureStorageAccount.from_settings(settings)
    from shared.storage.embedded import EmbeddedStorageAccount

    return EmbeddedStorageAccount(settings.data_dir / "storage")
