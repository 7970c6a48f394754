"""The dashboard over HTTP: a public page shell without data, and keyed JSON data."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, CSV, Api
from tests.dashboard.heartbeats import write_beat

pytestmark = pytest.mark.anyio


@pytest.fixture
def backend() -> str:
    return "embedded"


async def dashboard_data_until(api: Api, batch_id: str, timeout: float = 10.0) -> dict[str, Any]:
    """Poll as the page does: the data is cached for a couple of seconds."""
    deadline = time.monotonic() + timeout
    while True:
        response = await api.client.get("/dashboard/data", headers=AUTH)
        assert response.status_code == 200
        data: dict[str, Any] = response.json()
        if any(b["batch_id"] == batch_id for b in data["batches"]) or time.monotonic() > deadline:
            return data
        await asyncio.sleep(0.2)


async def test_the_data_needs_the_api_key(api: Api) -> None:
    for headers in ({}, {"Authorization": "Bearer not-the-key"}):
        response = await api.client.get("/dashboard/data", headers=headers)
        assert response.status_code == 401
        assert "batches" not in response.text


async def test_the_page_and_its_assets_are_public_and_hold_no_data(api: Api) -> None:
    accepted = await api.client.post("/batches", content=csv_file(rows(5)), headers=CSV)
    batch_id = accepted.json()["batch_id"]
    page = await api.client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert batch_id not in page.text
    assert 'src="/static/dashboard.js"' in page.text
    for asset, kind in (("dashboard.js", "javascript"), ("dashboard.css", "text/css")):
        response = await api.client.get(f"/static/{asset}")
        assert response.status_code == 200
        assert kind in response.headers["content-type"]


async def test_the_data_lists_batches_and_live_processors(api: Api) -> None:
    write_beat(api.services.storage.table(api.settings.heartbeats_table), "proc-a")
    accepted = await api.client.post("/batches", content=csv_file(rows(25)), headers=CSV)
    batch_id = accepted.json()["batch_id"]

    data = await dashboard_data_until(api, batch_id)

    [batch] = data["batches"]
    assert batch["batch_id"] == batch_id
    assert batch["status"] == "accepted"
    assert batch["transactions"] == 25
    assert batch["chunks"] == {"total": 3, "rated": 0, "applied": 0, "failed": 0, "in_flight": 3}
    assert batch["reconciled"] is None
    assert data["batch_counts"]["accepted"] == 1
    [processor] = data["processors"]
    assert processor["instance"] == "proc-a"
    assert (processor["active_threads"], processor["total_threads"]) == (2, 3)
    assert processor["queue_depth"] == 40


async def test_the_data_is_in_the_openapi_document(api: Api) -> None:
    document = (await api.client.get("/openapi.json", headers=AUTH)).json()
    assert "/dashboard/data" in document["paths"]
    assert "/metrics" in document["paths"]
