"""Storage: the ports and the choice of backend from the settings."""

from __future__ import annotations

from shared.settings import Settings
from shared.storage.ports import StorageAccount


def open_storage(settings: Settings) -> StorageAccount:
    """The Azure SDK backend when a connection string or account URL is set, else embedded.

    Under ``BILLING_FAULTS`` the Azure clients get faulty transports and the embedded account
    its fault twin (:mod:`shared.faults`).
    """
    if settings.uses_azure_storage:
        from shared.storage.azure import AzureStorageAccount

        return AzureStorageAccount.from_settings(settings)
    from shared.storage.embedded import EmbeddedStorageAccount

    account = EmbeddedStorageAccount(settings.data_dir / "storage")
    if settings.faults is None:
        return account
    from shared.faults.apply import with_embedded_storage_faults

    return with_embedded_storage_faults(account, settings)
