"""Reliability fixtures: a whole deployment per test, as in ``tests/e2e`` (whose ``stack`` and
``make_settings`` these are), plus ``make_embedded_settings`` for a test in which the storage
backend plays no part. A test turns faults on with ``faults="fail=0.1,lose=0.02,seed=7"``,
exactly the ``BILLING_FAULTS`` value a role process would run under.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import API_KEY, make_settings, stack
from tests.support.deployment_settings import SettingsFactory, stack_settings_factory
from tests.warehouse.conftest import postgres_admin, postgres_url

__all__ = ["SettingsFactory", "make_settings", "postgres_admin", "postgres_url", "stack"]


@pytest.fixture
def make_embedded_settings(tmp_path: Path, request: pytest.FixtureRequest) -> SettingsFactory:
    """Settings on the embedded backend with a SQLite warehouse, as ``make_settings``'s."""
    return stack_settings_factory(
        request,
        tmp_path,
        on_azurite=False,
        warehouse=True,
        api_keys=[API_KEY],
        partitions=2,
        id_range_size=100,
    )
