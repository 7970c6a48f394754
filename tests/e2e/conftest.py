"""End-to-end fixtures: a whole deployment per test on one of two stacks.

* ``embedded+sqlite``: the embedded backend in the test's folder, a SQLite warehouse;
* ``azurite+postgres``: Azurite (started once for the session) and a fresh PostgreSQL
  database (``tests/warehouse/conftest.py``: ``BILLING_TEST_POSTGRES_URL``).

The trigger bus is the embedded one on both: there is no Service Bus emulator without
Docker, and the Service Bus adapter has tests of its own (``tests/servicebus``). Resource
names are unique per test, so tests never meet on a shared Azurite.
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

# fixtures, re-exported for this folder, and the factory type its tests annotate with
__all__ = ["SettingsFactory", "postgres_admin", "postgres_url"]

API_KEY = "e2e-test-key"


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_settings(stack: str, tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    """Settings of this test's stack; keywords override. The listener timings are the
    production defaults: an end-to-end test runs the pipeline as deployed."""
    return stack_settings_factory(
        request,
        tmp_path,
        on_azurite=stack == AZURITE_STACK,
        warehouse=True,
        api_keys=[API_KEY],
        partitions=2,
        id_range_size=100,
    )
