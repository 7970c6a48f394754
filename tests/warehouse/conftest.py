"""Warehouse fixtures: every test runs on SQLite, and on PostgreSQL when one is configured.

PostgreSQL: set ``BILLING_TEST_POSTGRES_URL`` to a URL whose role may create databases,
e.g. ``postgresql+psycopg://billing:billing@127.0.0.1:5432/postgres`` (``.ci/run`` creates
that role). Each test gets a database of its own, created empty and dropped afterwards.
Without the variable the PostgreSQL variants skip — unless ``CI`` is set, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, insert, text
from sqlalchemy.engine import make_url

from shared.warehouse import Batch, make_engine, upgrade
from tests.support.postgres import drop_database

POSTGRES_URL_VARIABLE = "BILLING_TEST_POSTGRES_URL"
#: One prefix per test session, so leftovers of an aborted run are easy to spot and drop.
SESSION_PREFIX = f"billing_test_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Engine]:
    """An AUTOCOMMIT engine on the configured server, for CREATE/DROP DATABASE."""
    url = os.environ.get(POSTGRES_URL_VARIABLE)
    if not url:
        message = (
            f"PostgreSQL warehouse tests need {POSTGRES_URL_VARIABLE}, e.g. "
            "postgresql+psycopg://billing:billing@127.0.0.1:5432/postgres (see .ci/run)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {message}")
        pytest.skip(message)
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    yield admin
    admin.dispose()


@pytest.fixture
def postgres_url(postgres_admin: Engine, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"{SESSION_PREFIX}_{uuid.uuid4().hex[:8]}"
    with postgres_admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(postgres_admin.url).set(database=name).render_as_string(hide_password=False)
    drop_database(postgres_admin, name)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty warehouse database (not migrated)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'warehouse' / 'warehouse.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def engine(warehouse_url: str) -> Iterator[Engine]:
    """An engine on a migrated, empty warehouse."""
    upgrade(warehouse_url)
    engine = make_engine(warehouse_url)
    yield engine
    engine.dispose()


def add_batch(engine: Engine, batch_id: str, *, transactions: int = 0, chunks: int = 1) -> None:
    """Insert the ``batches`` row the reducer's foreign keys need."""
    with engine.begin() as connection:
        connection.execute(
            insert(Batch).values(
                batch_id=batch_id,
                priority="normal",
                transactions=transactions,
                chunks=chunks,
                pricebook_version="v1",
                status="processing",
                accepted_at=datetime.now(UTC),
                control_transactions=transactions,
                control_quantity=0,
                control_id_checksum=0,
            )
        )
