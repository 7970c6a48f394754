"""How the Azure backend is put together: endpoints, connection strings, retry options."""

from __future__ import annotations

from typing import Any

import pytest
from azure.core.credentials import AccessToken

from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.azure import AzureStorageAccount, service_endpoints
from shared.storage.azure.options import (
    RetryOptions,
    blob_client_options,
    queue_client_options,
    table_client_options,
)


class UnusedCredential:
    """A token credential that must never be asked: building clients sends nothing."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        raise AssertionError("no request expected")


@pytest.mark.parametrize(
    "account_url",
    [
        "https://acct.blob.core.windows.net",
        "https://acct.queue.core.windows.net/",
        "https://acct.table.core.windows.net",
        "https://acct.dfs.core.windows.net",
    ],
)
def test_any_service_url_of_an_account_gives_all_three_endpoints(account_url: str) -> None:
    assert service_endpoints(account_url) == {
        "blob": "https://acct.blob.core.windows.net",
        "queue": "https://acct.queue.core.windows.net",
        "table": "https://acct.table.core.windows.net",
    }


def test_sovereign_cloud_suffixes_are_kept() -> None:
    endpoints = service_endpoints("https://acct.blob.core.chinacloudapi.cn")
    assert endpoints["table"] == "https://acct.table.core.chinacloudapi.cn"


@pytest.mark.parametrize(
    "account_url", ["http://127.0.0.1:10000/devstoreaccount1", "acct", "https://example.com"]
)
def test_a_url_that_names_no_account_service_is_refused(account_url: str) -> None:
    with pytest.raises(ValueError, match="storage account URL"):
        service_endpoints(account_url)


def test_account_url_with_a_token_credential_addresses_each_service() -> None:
    account = AzureStorageAccount.from_account_url(
        "https://acct.blob.core.windows.net", credential=UnusedCredential()
    )
    with account:
        assert account.account_name == "acct"
        assert account.queue("work").name == "work"
        assert account.table("batches").name == "batches"


def test_the_development_storage_shortcut_reaches_azurite_default_ports() -> None:
    with AzureStorageAccount.from_connection_string("UseDevelopmentStorage=true") as account:
        assert account.account_name == "devstoreaccount1"


def test_settings_with_a_connection_string_select_the_azure_backend() -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        storage_connection_string="UseDevelopmentStorage=true",  # type: ignore[arg-type]
    )
    account = open_storage(settings)
    try:
        assert isinstance(account, AzureStorageAccount)
    finally:
        account.close()


def test_retry_waits_the_configured_short_back_off_not_the_sdk_default() -> None:
    retry = RetryOptions(total=4, backoff_seconds=0.2)
    for options in (queue_client_options(retry), blob_client_options(retry)):
        policy = options["retry_policy"]
        assert policy.total_retries == 4
        waits = [policy.get_backoff_time({"count": n}) for n in range(50)]
        assert all(0.1 <= wait <= 0.3 for wait in waits)  # backoff ± half of it as jitter
    tables = table_client_options(retry)
    assert (tables["retry_total"], tables["retry_backoff_factor"]) == (4, 0.2)


def test_retry_options_come_from_the_settings() -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        storage_retry_total=2,
        storage_retry_backoff_seconds=0.1,
    )
    assert RetryOptions.from_settings(settings) == RetryOptions(total=2, backoff_seconds=0.1)
