"""The meter sees every HTTP request the SDK clients send, retries included."""

from __future__ import annotations

import pytest
from azure.core.exceptions import ServiceRequestError

from shared import meter
from shared.storage.azure import AzureStorageAccount
from shared.storage.azure.options import RetryOptions
from tests.support.azurite import AzuriteInfo, free_ports


def test_every_attempt_is_counted_when_the_service_cannot_be_reached() -> None:
    [port] = free_ports(1)  # nothing listens there: every attempt is refused
    nowhere = AzuriteInfo(blob_port=port, queue_port=port, table_port=port)
    account = AzureStorageAccount.from_connection_string(
        nowhere.connection_string, retry=RetryOptions(total=2, backoff_seconds=0.01)
    )
    before = meter.snapshot()
    with account:
        with pytest.raises(ServiceRequestError):
            account.queue("q").approximate_count()
        with pytest.raises(ServiceRequestError):
            account.table("t").get("p", "r")

    # One first try and two retries each: a retried request is billed again.
    assert meter.diff(meter.snapshot(), before) == {"queue.count": 3, "table.read": 3}
