"""Controller fixtures: each test runs on embedded + SQLite and on Azurite + PostgreSQL.

Resource names are unique per test (a shared Azurite), the warehouse is a fresh SQLite file
or a fresh PostgreSQL database (``tests/warehouse/conftest.py``), and the listener's timings
are short so that a message left undeleted reappears within seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from controller.worker import ControllerWorker
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.listener_settings import listener_config
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import StorageAccount
from shared.warehouse import make_engine, upgrade
from tests.support.deployment_settings import (
    AZURITE_STACK,
    STACKS,
    SettingsFactory,
    stack_settings_factory,
)
from tests.warehouse.conftest import postgres_admin, postgres_url

# fixtures, re-exported for this folder, and the factory type its tests annotate with
__all__ = ["SettingsFactory", "postgres_admin", "postgres_url"]

#: A message left undeleted (a killed controller) reappears after this many seconds.
VISIBILITY_SECONDS = 2
CLOSE_TIMEOUT_SECONDS = 60.0

WorkerFactory = Callable[..., ControllerWorker]


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_settings(stack: str, tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    """Settings of this test's stack; keywords override. One partition and short listener
    timings: a message left undeleted comes back within seconds."""
    return stack_settings_factory(
        request,
        tmp_path,
        on_azurite=stack == AZURITE_STACK,
        warehouse=True,
        api_keys=["controller-test-key"],
        partitions=1,
        visibility_timeout_seconds=VISIBILITY_SECONDS,
        backoff_max_idle_ms=200,
        id_range_size=50,
    )


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings()


@pytest.fixture
def storage(settings: Settings) -> Iterator[StorageAccount]:
    account = open_storage(settings)
    ensure_resources(settings, account, None)
    try:
        yield account
    finally:
        account.close()


@pytest.fixture
def warehouse(settings: Settings) -> Iterator[Engine]:
    """An engine on the (migrated) warehouse, for the tests' own queries."""
    upgrade(settings.resolved_warehouse_url)
    engine = make_engine(settings.resolved_warehouse_url)
    yield engine
    engine.dispose()


@pytest.fixture
def start_worker(settings: Settings, storage: StorageAccount) -> Iterator[WorkerFactory]:
    """Start controller workers (stopped at the end of the test)."""
    started: list[ControllerWorker] = []

    def start(**listener_overrides: object) -> ControllerWorker:
        config = listener_config(settings, **{"handler_parallelism": 2, **listener_overrides})
        worker = ControllerWorker(settings, storage, listener_config=config)
        worker.start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop(5)


def wait_until_closed(
    storage: StorageAccount,
    settings: Settings,
    batch_id: str,
    timeout: float = CLOSE_TIMEOUT_SECONDS,
) -> BatchRecord:
    """Poll the batch record until the controller has closed the batch."""
    records = BatchRecords(storage.table(settings.batches_table))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stored = records.find(batch_id)
        if stored and stored.record.status in (BatchStatus.COMPLETED, BatchStatus.FAILED):
            return stored.record
        time.sleep(0.05)
    found = records.find(batch_id)
    raise AssertionError(f"batch {batch_id} not closed in {timeout} s: {found}")
