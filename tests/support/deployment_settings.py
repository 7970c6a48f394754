"""Settings of a test deployment, shared by the api, controller, processor and e2e suites.

Every queue, container, table and topic name carries a token of its own, so tests that share
the session's Azurite never meet. On Azurite the storage SDK retries twice, 50 ms apart: a
local emulator answers at once or not at all, and the SDK's default back-off would stretch a
failing test to minutes. Settings are built with ``_env_file=None``: a developer's ``.env``
never leaks into a test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from shared.settings import Settings
from tests.support.azurite import AzuriteInfo
from tests.support.names import unique_name

#: ``make(**overrides)`` → settings of the test's deployment, keywords overriding.
SettingsFactory = Callable[..., Settings]

#: A test on the embedded backend with a SQLite warehouse, and one on Azurite with PostgreSQL:
#: ``@pytest.fixture(params=STACKS)`` runs every test that asks for it on both.
EMBEDDED_STACK = "embedded+sqlite"
AZURITE_STACK = "azurite+postgres"
STACKS = [
    EMBEDDED_STACK,
    pytest.param(AZURITE_STACK, marks=[pytest.mark.azurite, pytest.mark.postgres]),
]

AZURITE_RETRY_TOTAL = 2
AZURITE_RETRY_BACKOFF_SECONDS = 0.05


def resource_names() -> dict[str, str]:
    """Queue, container, table and topic names no other test uses (one token for them all,
    so that a test can find everything it created by that token)."""
    token = unique_name("t")[:11]
    return {
        "work_queue_prefix": f"w{token}",
        "output_queue": f"o{token}",
        "payload_container": f"p{token}",
        "results_container": f"r{token}",
        "control_container": f"c{token}",
        "upload_container": f"i{token}",
        "batches_table": f"batches{token}",
        "chunks_table": f"chunks{token}",
        "heartbeats_table": f"hb{token}",
        "trigger_topic": f"trig{token}",
    }


def azurite_connection_string(request: pytest.FixtureRequest, on_azurite: bool) -> str | None:
    """The session Azurite's connection string (started on first use) when ``on_azurite``;
    ``None`` for the embedded backend, which then needs no emulator at all."""
    if not on_azurite:
        return None
    azurite: AzuriteInfo = request.getfixturevalue("azurite")
    return azurite.connection_string


def sqlite_warehouse_url(folder: Path) -> str:
    """A fresh SQLite warehouse in the test's folder."""
    return f"sqlite:///{folder / 'warehouse' / 'warehouse.sqlite3'}"


def deployment_values(
    folder: Path,
    *,
    connection_string: str | None = None,
    warehouse_url: str | None = None,
    **values: object,
) -> dict[str, object]:
    """Settings values of a deployment in ``folder`` (its data in ``folder / "billing"``) with
    fresh resource names; on Azurite when ``connection_string`` is given, with a warehouse
    when ``warehouse_url`` is. ``values`` come last and win."""
    # Tests send the same sample files on purpose (to compare readers, to replay keys): the
    # refusal of a body sent twice is off here, and on in tests/api/test_duplicate_bodies.py.
    base: dict[str, object] = {
        "data_dir": folder / "billing",
        "duplicate_body_window_seconds": 0,
        **resource_names(),
    }
    if connection_string is not None:
        base |= {
            "storage_connection_string": connection_string,
            "storage_retry_total": AZURITE_RETRY_TOTAL,
            "storage_retry_backoff_seconds": AZURITE_RETRY_BACKOFF_SECONDS,
        }
    if warehouse_url is not None:
        base["warehouse_url"] = warehouse_url
    return base | values


def settings_factory(values: Mapping[str, object]) -> SettingsFactory:
    """``make(**overrides)``: settings from ``values``, keywords overriding, no ``.env`` read."""
    frozen = dict(values)

    def make(**overrides: object) -> Settings:
        return Settings(_env_file=None, **{**frozen, **overrides})  # type: ignore[call-arg, arg-type]

    return make


def stack_settings_factory(
    request: pytest.FixtureRequest,
    folder: Path,
    *,
    on_azurite: bool,
    warehouse: bool = False,
    **values: object,
) -> SettingsFactory:
    """Settings of one test on its stack (see :func:`deployment_values`).

    On Azurite the warehouse (with ``warehouse``) is a fresh PostgreSQL database: the
    ``postgres_url`` fixture, which the calling folder's conftest must offer. On the embedded
    backend it is a SQLite file in ``folder``.
    """
    connection_string = azurite_connection_string(request, on_azurite)
    warehouse_url: str | None = None
    if warehouse:
        warehouse_url = (
            str(request.getfixturevalue("postgres_url"))
            if on_azurite
            else sqlite_warehouse_url(folder)
        )
    return settings_factory(
        deployment_values(
            folder, connection_string=connection_string, warehouse_url=warehouse_url, **values
        )
    )


def billing_environment(values: Mapping[str, object]) -> dict[str, str]:
    """The same values as ``BILLING_*`` variables, for a role started as its own process.
    Values must be scalars (a list setting as its comma-separated text)."""
    return {f"BILLING_{name.upper()}": str(value) for name, value in values.items()}
