"""``GET /batches/{id}`` and ``GET /batches/{id}/invoices`` through the real HTTP stack.

The initiator app runs with its lifespan and is driven by ``httpx`` over ASGI; a controller
handler applies the chunks one by one in between, so every intermediate count is known.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from controller.worker import build_result_handler, order_id_allocator
from initiator.app import create_app
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import control_totals, make_transactions, publish_batch
from tests.controller.conftest import SettingsFactory
from tests.support.reference_rater import SAMPLE_BOOK, reference_invoices

pytestmark = pytest.mark.anyio
AUTH = {"Authorization": "Bearer controller-test-key"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def api_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://initiator", headers=AUTH
        ) as client:
            yield client


async def get_json(client: httpx.AsyncClient, path: str, **params: Any) -> dict[str, Any]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_status_shows_applied_and_in_flight_chunks_then_the_reconciled_outcome(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    transactions = make_transactions(80, seed=31)
    batch = publish_batch(storage, settings, "b-status", transactions, chunk_size=20)
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    control = control_totals(transactions)

    async with api_client(settings) as client:
        status = await get_json(client, "/batches/b-status")
        assert status["status"] == "accepted"
        assert status["chunks"] == {
            "total": 4,
            "rated": 4,
            "applied": 0,
            "failed": 0,
            "in_flight": 4,
        }
        assert (status["reconciled"], status["warehouse_totals"]) == (None, None)

        for message in batch.results[:2]:
            handler.handle_text(message.to_text())
        status = await get_json(client, "/batches/b-status")
        assert status["status"] == "processing"
        assert status["chunks"] == {
            "total": 4,
            "rated": 4,
            "applied": 2,
            "failed": 0,
            "in_flight": 2,
        }
        assert status["reconciled"] is None
        assert status["timings"]["completed_at"] is None

        for message in batch.results[2:]:
            handler.handle_text(message.to_text())
        status = await get_json(client, "/batches/b-status")

    assert status["status"] == "completed"
    assert status["priority"] == "normal"
    assert status["transactions"] == len(transactions)
    assert status["chunks"] == {
        "total": 4,
        "rated": 4,
        "applied": 4,
        "failed": 0,
        "in_flight": 0,
    }
    assert status["reconciled"] is True
    assert status["failed_chunks"] == []
    assert status["control_totals"] == status["warehouse_totals"] == control.model_dump()
    timings = status["timings"]
    assert timings["accepted_at"] is not None
    assert timings["completed_at"] is not None
    assert timings["end_to_end_seconds"] > 0
    assert timings["throughput"] == pytest.approx(len(transactions) / timings["end_to_end_seconds"])


async def test_invoices_come_from_the_warehouse_page_by_page(
    settings: Settings, storage: StorageAccount, warehouse: Engine
) -> None:
    transactions = make_transactions(60, seed=37, customers=5)
    batch = publish_batch(storage, settings, "b-invoices", transactions, chunk_size=20)
    handler = build_result_handler(
        settings, storage, warehouse, order_id_allocator(settings, storage)
    )
    for message in batch.results:
        handler.handle_text(message.to_text())
    expected = reference_invoices(SAMPLE_BOOK, transactions)

    async with api_client(settings) as client:
        pages = [
            await get_json(client, "/batches/b-invoices/invoices", limit=2, offset=offset)
            for offset in (0, 2, 4)
        ]
        by_total = await get_json(client, "/batches/b-invoices/invoices", order="total")
        missing = await client.get("/batches/b-nope/invoices")
        unauthenticated = await client.get(
            "/batches/b-invoices/invoices", headers={"Authorization": "Bearer wrong"}
        )
        too_large = await client.get("/batches/b-invoices/invoices", params={"limit": 5000})

    assert [len(page["invoices"]) for page in pages] == [2, 2, 1]
    assert all(page["total_invoices"] == len(expected) == 5 for page in pages)
    lines = [invoice for page in pages for invoice in page["invoices"]]
    assert [line["customer_id"] for line in lines] == sorted(expected)
    for line in lines:
        figures = {name: line[name] for name in expected[line["customer_id"]]}
        assert figures == expected[line["customer_id"]]
        assert line["currency"] == "USD"
    totals = [line["total"] for line in by_total["invoices"]]
    assert totals == sorted(totals, reverse=True)
    assert missing.status_code == 404
    assert unauthenticated.status_code == 401
    assert too_large.status_code == 422


async def test_invoices_before_any_controller_migrated_the_warehouse_are_503(
    make_settings: SettingsFactory, storage: StorageAccount, tmp_path: Any
) -> None:
    settings = make_settings(warehouse_url=f"sqlite:///{tmp_path / 'never-migrated.sqlite3'}")
    publish_batch(storage, settings, "b-early", make_transactions(5), chunk_size=5)

    async with api_client(settings) as client:
        response = await client.get("/batches/b-early/invoices")

    assert response.status_code == 503
    assert "billing warehouse upgrade" in response.json()["detail"]
