"""``GET /batches/{id}/invoices`` when the warehouse misbehaves, through the real HTTP stack.

The page is the initiator's one SQL read. It must never answer 500: an offset SQL cannot
take is a 422, a warehouse that is down is a 503 with ``Retry-After``, and a SQLite writer
holding its lock for a long time does not hold up readers at all (WAL; the initiator's
reads do not ask for the write lock).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from billing.demo.cluster import free_port
from shared.settings import Settings
from shared.warehouse import upgrade
from tests.api.batch_files import csv_file, rows
from tests.api.harness import API_KEY, AUTH
from tests.support.deployment_settings import SettingsFactory, stack_settings_factory
from tests.support.live_initiator import ANSWER_TIMEOUT_SECONDS, serving

CSV = {**AUTH, "Content-Type": "text/csv"}


@pytest.fixture
def make_settings(request: pytest.FixtureRequest, tmp_path: Path) -> SettingsFactory:
    return stack_settings_factory(
        request, tmp_path, on_azurite=False, warehouse=True, api_keys=[API_KEY]
    )


def submitted_batch(http: httpx.Client) -> str:
    response = http.post("/batches", content=csv_file(rows(5)), headers=CSV)
    assert response.status_code == 202, response.text
    batch_id: str = response.json()["batch_id"]
    return batch_id


def client_for(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers=AUTH, timeout=ANSWER_TIMEOUT_SECONDS * 3)


def test_an_offset_sql_cannot_take_is_a_422(make_settings: SettingsFactory) -> None:
    settings = make_settings()
    upgrade(settings.resolved_warehouse_url)
    with serving(settings) as live, client_for(live.base_url) as http:
        batch_id = submitted_batch(http)
        path = f"/batches/{batch_id}/invoices"
        largest = http.get(path, params={"offset": 2**63 - 1})
        assert largest.status_code == 200, largest.text
        assert largest.json()["invoices"] == []
        for offset in (2**63, 10**30):
            too_far = http.get(path, params={"offset": offset})
            assert too_far.status_code == 422, too_far.text
            assert too_far.json()["problems"][0]["field"] == "query.offset"


def test_reads_go_on_while_a_writer_holds_the_sqlite_lock(make_settings: SettingsFactory) -> None:
    settings = make_settings()
    upgrade(settings.resolved_warehouse_url)
    with serving(settings) as live, client_for(live.base_url) as http:
        batch_id = submitted_batch(http)
        with _write_lock_held(settings):
            page = http.get(f"/batches/{batch_id}/invoices")
        assert page.status_code == 200, page.text
        assert page.json()["total_invoices"] == 0


def test_a_warehouse_that_is_down_is_a_503_with_retry_after(
    make_settings: SettingsFactory,
) -> None:
    nobody_listens = f"postgresql+psycopg://billing:billing@127.0.0.1:{free_port()}/warehouse"
    settings = make_settings(warehouse_url=nobody_listens)
    with serving(settings) as live, client_for(live.base_url) as http:
        batch_id = submitted_batch(http)
        page = http.get(f"/batches/{batch_id}/invoices")
    assert page.status_code == 503, page.text
    assert page.headers["retry-after"] == "5"
    assert page.json()["title"] == "Warehouse unavailable"


@contextmanager
def _write_lock_held(settings: Settings) -> Iterator[None]:
    """Another process's writer in the middle of a long transaction on the SQLite file."""
    database = make_url(settings.resolved_warehouse_url).database
    assert database is not None
    connection = sqlite3.connect(database, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("UPDATE alembic_version SET version_num = version_num")
        yield
        connection.execute("ROLLBACK")
    finally:
        connection.close()
