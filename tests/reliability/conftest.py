"""Reliability fixtures: a whole deployment per test on each stack, as in ``tests/e2e``.

``make_settings`` builds the test's settings on its stack (embedded + SQLite, Azurite +
PostgreSQL); a test turns faults on with ``faults="fail=0.1,lose=0.02,seed=7"``, exactly the
``BILLING_FAULTS`` value a role process would run under.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.deployment_settings import (
    AZURITE_STACK,
    STACKS,
    SettingsFactory,
    stack_settings_factory,
)
from tests.warehouse.conftest import postgres_admin, postgres_url

__all__ = ["SettingsFactory", "postgres_admin", "postgres_url"]

API_KEY = "reliability-test-key"


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_settings(stack: str, tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    return _factory(request, tmp_path, on_azurite=stack == AZURITE_STACK)


@pytest.fixture
def make_embedded_settings(tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    """For a test where the storage backend makes no difference (the bus, the warehouse)."""
    return _factory(request, tmp_path, on_azurite=False)


def _factory(request: pytest.FixtureRequest, folder: Path, *, on_azurite: bool) -> SettingsFactory:
    return stack_settings_factory(
        request,
        folder,
        on_azurite=on_azurite,
        warehouse=True,
        api_keys=[API_KEY],
        partitions=2,
        id_range_size=100,
    )
