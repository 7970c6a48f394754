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

from controller.warehouse import make_engine, upgrade
from controller.worker import ControllerWorker
from shared.batch_records import BatchRecord, BatchRecords, BatchStatus
from shared.listener import ListenerConfig
from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage
from shared.storage.ports import StorageAccount
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name
from tests.warehouse.conftest import postgres_admin, postgres_url

__all__ = ["postgres_admin", "postgres_url"]  # fixtures, re-exported for this folder

#: A message left undeleted (a killed controller) reappears after this many seconds.
VISIBILITY_SECONDS = 2
CLOSE_TIMEOUT_SECONDS = 60.0

SettingsFactory = Callable[..., Settings]
WorkerFactory = Callable[..., ControllerWorker]


@pytest.fixture(
    params=[
        "embedded+sqlite",
        pytest.param("azurite+postgres", marks=[pytest.mark.azurite, pytest.mark.postgres]),
    ]
)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_settings(stack: str, tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    token = unique_name("t")[:11]
    base: dict[str, object] = {
        "data_dir": tmp_path / "billing",
        "api_keys": ["controller-test-key"],
        "work_queue_prefix": f"w{token}",
        "output_queue": f"o{token}",
        "payload_container": f"p{token}",
        "results_container": f"r{token}",
        "control_container": f"c{token}",
        "batches_table": f"batches{token}",
        "chunks_table": f"chunks{token}",
        "heartbeats_table": f"hb{token}",
        "partitions": 1,
        "visibility_timeout_seconds": VISIBILITY_SECONDS,
        "backoff_max_idle_ms": 200,
        "id_range_size": 50,
    }
    if stack == "azurite+postgres":
        azurite: AzuriteInfo = request.getfixturevalue("azurite")
        base["storage_connection_string"] = azurite.connection_string
        base["storage_retry_total"] = 2
        base["storage_retry_backoff_seconds"] = 0.05
        base["warehouse_url"] = request.getfixturevalue("postgres_url")
    else:
        base["warehouse_url"] = f"sqlite:///{tmp_path / 'warehouse' / 'warehouse.sqlite3'}"

    def make(**overrides: object) -> Settings:
        return Settings(_env_file=None, **{**base, **overrides})  # type: ignore[call-arg, arg-type]

    return make


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
        config = ListenerConfig.from_settings(
            settings, **{"handler_parallelism": 2, **listener_overrides}
        )
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
