"""Fixtures for the initiator's API tests: settings per backend, the started app.

Every test runs on the embedded backend and on Azurite. Resource names are unique per test,
so "no trace" can be checked on a shared Azurite by listing every container, queue and
table whose name carries the test's token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from initiator.dependencies import Services, open_services
from initiator.publishing import FaultHook
from shared.settings import Settings
from tests.api.harness import API_KEY, SECOND_KEY, Api, started_api
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name

#: Small chunks, so that even small test batches have several.
TEST_CHUNK_SIZE = 10

SettingsFactory = Callable[..., Settings]
ServicesFactory = Callable[..., Services]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_settings(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    """Settings for this test's backend with unique names; keywords override."""
    token = unique_name("t")[:11]
    base: dict[str, object] = {
        "data_dir": tmp_path / "billing",
        "api_keys": [API_KEY, SECOND_KEY],
        "chunk_size": TEST_CHUNK_SIZE,
        "work_queue_prefix": f"w{token}",
        "output_queue": f"o{token}",
        "payload_container": f"p{token}",
        "results_container": f"r{token}",
        "control_container": f"c{token}",
        "batches_table": f"batches{token}",
        "chunks_table": f"chunks{token}",
        "heartbeats_table": f"hb{token}",
    }
    if backend == "azurite":
        azurite: AzuriteInfo = request.getfixturevalue("azurite")
        base["storage_connection_string"] = azurite.connection_string
        base["storage_retry_total"] = 2
        base["storage_retry_backoff_seconds"] = 0.05

    def make(**overrides: object) -> Settings:
        return Settings(_env_file=None, **{**base, **overrides})  # type: ignore[call-arg, arg-type]

    return make


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings()


@pytest.fixture
async def api(settings: Settings) -> AsyncIterator[Api]:
    async with started_api(settings) as started:
        yield started


@pytest.fixture
def open_services_for() -> Iterator[ServicesFactory]:
    """Open the initiator's services without HTTP (crash tests); closed at the end."""
    opened: list[Services] = []

    def open_for(settings: Settings, fault: FaultHook | None = None) -> Services:
        services = open_services(settings, fault=fault)
        opened.append(services)
        return services

    yield open_for
    for services in opened:
        services.close()
