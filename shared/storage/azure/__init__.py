"""The Azure SDK storage backend: queues, blob containers and tables of one storage account.

One module per service (``queue``, ``blob``, ``table``), the client options they share
(retry, metering) in ``options``, and the account that hands them out in ``account``.
"""

from shared.storage.azure.account import AzureStorageAccount, service_endpoints

__all__ = ["AzureStorageAccount", "service_endpoints"]
