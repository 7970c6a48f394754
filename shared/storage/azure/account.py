"""The storage account: one service client per service, handing out queues, containers, tables.

Two ways in: a connection string (Azurite's ``UseDevelopmentStorage=true``
or an explicit one with custom ports) or an account URL with ``DefaultAzureCredential``.
The clients a service client hands out share its pipeline, so retry and metering are set
once, here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from azure.data.tables import TableServiceClient
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueServiceClient

from shared.closing import Closing
from shared.faults.spec import FaultSpec, Target
from shared.settings import Settings
from shared.storage.azure.blob import AzureBlobContainer
from shared.storage.azure.options import (
    RetryOptions,
    blob_client_options,
    queue_client_options,
    table_client_options,
)
from shared.storage.azure.queue import AzureQueue
from shared.storage.azure.table import AzureTable

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

    from shared.faults.plan import FaultPlan

SERVICES: tuple[Target, ...] = ("blob", "queue", "table")
#: Fault plans by service, for the clients' transports (:mod:`shared.faults`).
FaultPlans = Mapping[str, "FaultPlan"]
#: Host labels that name a service of a storage account (``<account>.<service>.<suffix>``).
_SERVICE_LABELS = frozenset({*SERVICES, "dfs", "file", "web"})


class AzureStorageAccount(Closing):
    """A storage account through the SDKs; see :class:`shared.storage.ports.StorageAccount`."""

    def __init__(
        self, blobs: BlobServiceClient, queues: QueueServiceClient, tables: TableServiceClient
    ) -> None:
        self._blobs = blobs
        self._queues = queues
        self._tables = tables

    @classmethod
    def from_settings(cls, settings: Settings) -> AzureStorageAccount:
        retry = RetryOptions.from_settings(settings)
        faults = fault_plans(settings.faults)
        if settings.storage_connection_string is not None:
            secret = settings.storage_connection_string.get_secret_value()
            return cls.from_connection_string(secret, retry=retry, faults=faults)
        if settings.storage_account_url:
            return cls.from_account_url(settings.storage_account_url, retry=retry, faults=faults)
        raise ValueError(
            "set BILLING_STORAGE_CONNECTION_STRING or BILLING_STORAGE_ACCOUNT_URL for Azure storage"
        )

    @classmethod
    def from_connection_string(
        cls,
        connection_string: str,
        *,
        retry: RetryOptions | None = None,
        faults: FaultPlans | None = None,
    ) -> AzureStorageAccount:
        """Azurite (``UseDevelopmentStorage=true`` or explicit endpoints) or a key-based account.

        ``faults``: fault plans for the clients' transports, by service (tests; see
        :mod:`shared.faults`).
        """
        retry = retry or RetryOptions()
        return cls(
            BlobServiceClient.from_connection_string(
                connection_string, **blob_client_options(retry), **with_faults(faults, "blob")
            ),
            QueueServiceClient.from_connection_string(
                connection_string, **queue_client_options(retry), **with_faults(faults, "queue")
            ),
            TableServiceClient.from_connection_string(
                connection_string, **table_client_options(retry), **with_faults(faults, "table")
            ),
        )

    @classmethod
    def from_account_url(
        cls,
        account_url: str,
        *,
        credential: TokenCredential | None = None,
        retry: RetryOptions | None = None,
        faults: FaultPlans | None = None,
    ) -> AzureStorageAccount:
        """An Azure account by any of its service URLs, signed in with Entra ID.

        ``credential`` defaults to ``DefaultAzureCredential`` (managed identity in Azure, the
        developer's ``az login`` locally).
        """
        retry = retry or RetryOptions()
        if credential is None:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        endpoints = service_endpoints(account_url)
        return cls(
            BlobServiceClient(
                endpoints["blob"],
                credential,
                **blob_client_options(retry),
                **with_faults(faults, "blob"),
            ),
            QueueServiceClient(
                endpoints["queue"],
                credential,
                **queue_client_options(retry),
                **with_faults(faults, "queue"),
            ),
            TableServiceClient(
                endpoints["table"],
                credential=credential,
                **table_client_options(retry),
                **with_faults(faults, "table"),
            ),
        )

    @property
    def account_name(self) -> str:
        return self._queues.account_name or ""

    def queue(self, name: str) -> AzureQueue:
        return AzureQueue(self._queues.get_queue_client(name))

    def container(self, name: str) -> AzureBlobContainer:
        return AzureBlobContainer(self._blobs.get_container_client(name))

    def table(self, name: str) -> AzureTable:
        return AzureTable(self._tables.get_table_client(name))

    def list_queues(self) -> list[str]:
        return [queue.name for queue in self._queues.list_queues()]

    def list_containers(self) -> list[str]:
        return [container.name for container in self._blobs.list_containers()]

    def list_tables(self) -> list[str]:
        return [table.name for table in self._tables.list_tables()]

    def close(self) -> None:
        self._blobs.close()
        self._queues.close()
        self._tables.close()


def fault_plans(spec: FaultSpec | None) -> FaultPlans:
    """One fault plan per service that ``spec`` targets (announced loudly), or none."""
    if spec is None:
        return {}
    from shared.faults.plan import FaultPlan, announce

    plans: dict[str, FaultPlan] = {}
    for service in SERVICES:
        if spec.applies_to(service):
            announce(spec, f"Azure {service} client")
            plans[service] = FaultPlan(spec, service)
    return plans


def with_faults(faults: FaultPlans | None, service: Target) -> dict[str, Any]:
    """``{"transport": ...}`` injecting the service's fault plan into its client, or ``{}``."""
    plan = (faults or {}).get(service)
    if plan is None:
        return {}
    from shared.faults.transport import faulty_transport

    return {"transport": faulty_transport(plan, service)}


def service_endpoints(account_url: str) -> dict[str, str]:
    """The blob, queue and table endpoints of the account that ``account_url`` names.

    ``https://acct.blob.core.windows.net`` (or the queue, table, dfs… URL of the same account,
    in any cloud) gives ``{"blob": "https://acct.blob.core.windows.net", "queue":
    "https://acct.queue.core.windows.net", "table": "https://acct.table.core.windows.net"}``.
    """
    parts = urlsplit(account_url.strip())
    labels = (parts.hostname or "").split(".")
    if parts.scheme not in ("http", "https") or len(labels) < 3 or labels[1] not in _SERVICE_LABELS:
        raise ValueError(
            f"not a storage account URL: {account_url!r} (expected "
            "https://<account>.blob.core.windows.net; use a connection string for Azurite)"
        )
    port = f":{parts.port}" if parts.port else ""
    suffix = ".".join(labels[2:])
    return {
        service: f"{parts.scheme}://{labels[0]}.{service}.{suffix}{port}" for service in SERVICES
    }
