"""The storage ports under a scripted fault plan, on two backends.

``embedded``: the embedded account wrapped in its fault twin (:mod:`shared.faults.storage`);
``azurite``: the Azure SDK clients with the faulty transport (:mod:`shared.faults.transport`)
against Azurite. The same scripted faults must give the same outcome on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.faults.retrying import RetryingInjector
from shared.faults.storage import FaultyStorageAccount
from shared.storage.ports import StorageAccount
from tests.faults.scripted import ScriptedPlan
from tests.support.azurite import AzuriteInfo

#: The SDK's retry budget in these tests: up to 3 retries, 10 ms apart.
RETRY_TOTAL = 3
BACKOFF_SECONDS = 0.01


@dataclass
class FaultyStorage:
    account: StorageAccount
    plan: ScriptedPlan


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def faulty(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FaultyStorage]:
    plan = ScriptedPlan()
    account: StorageAccount
    if request.param == "azurite":
        from shared.storage.azure import AzureStorageAccount
        from shared.storage.azure.options import RetryOptions

        azurite: AzuriteInfo = request.getfixturevalue("azurite")
        account = AzureStorageAccount.from_connection_string(
            azurite.connection_string,
            retry=RetryOptions(total=RETRY_TOTAL, backoff_seconds=BACKOFF_SECONDS),
            faults={"blob": plan, "queue": plan, "table": plan},
        )
    else:
        from shared.storage.embedded import EmbeddedStorageAccount

        injector = RetryingInjector(plan, retry_total=RETRY_TOTAL, backoff_seconds=BACKOFF_SECONDS)
        account = FaultyStorageAccount(
            EmbeddedStorageAccount(tmp_path / "storage"),
            blob=injector,
            queue=injector,
            table=injector,
        )
    try:
        yield FaultyStorage(account, plan)
    finally:
        account.close()
