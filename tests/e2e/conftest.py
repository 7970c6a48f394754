"""End-to-end fixtures: a whole deployment per test on one of two stacks.

* ``embedded+sqlite``: the embedded backend in the test's folder, a SQLite warehouse;
* ``azurite+postgres``: Azurite (started once for the session) and a fresh PostgreSQL
  database (``tests/warehouse/conftest.py``: ``BILLING_TEST_POSTGRES_URL``).

The trigger bus is the embedded one on both: there is no Service Bus emulator without
Docker, and the Service Bus adapter has tests of its own (``tests/servicebus``). Resource
names are unique per test, so tests never meet on a shared Azurite.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.settings import Settings
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name
from tests.warehouse.conftest import postgres_admin, postgres_url

__all__ = ["postgres_admin", "postgres_url"]  # fixtures, re-exported for this folder

API_KEY = "e2e-test-key"

SettingsFactory = Callable[..., Settings]


@pytest.fixture(
    params=[
        "embedded+sqlite",
        pytest.param("azurite+postgres", marks=[pytest.mark.azurite, pytest.mark.postgres]),
    ]
)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def resource_names() -> dict[str, str]:
    """Queue, container, table and topic names no other test uses."""
    token = unique_name("t")[:11]
    return {
        "work_queue_prefix": f"w{token}",
        "output_queue": f"o{token}",
        "payload_container": f"p{token}",
        "results_container": f"r{token}",
        "control_container": f"c{token}",
        "batches_table": f"batches{token}",
        "chunks_table": f"chunks{token}",
        "heartbeats_table": f"hb{token}",
        "trigger_topic": f"trig{token}",
    }


@pytest.fixture
def make_settings(stack: str, tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    """Settings of this test's stack; keywords override. The listener timings are the
    production defaults: an end-to-end test runs the pipeline as deployed."""
    base: dict[str, object] = {
        "data_dir": tmp_path / "billing",
        "api_keys": [API_KEY],
        **resource_names(),
        "partitions": 2,
        "id_range_size": 100,
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
