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
from tests.support.deployment_settings import SettingsFactory, stack_settings_factory

__all__ = ["SettingsFactory"]  # the factory type this folder's tests annotate with

#: Small chunks, so that even small test batches have several.
TEST_CHUNK_SIZE = 10

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
    return stack_settings_factory(
        request,
        tmp_path,
        on_azurite=backend == "azurite",
        api_keys=[API_KEY, SECOND_KEY],
        chunk_size=TEST_CHUNK_SIZE,
    )


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
