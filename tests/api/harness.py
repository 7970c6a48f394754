"""The app under test: started with its lifespan, driven by ``httpx`` through ASGI."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
from fastapi import FastAPI

from initiator.app import create_app
from initiator.dependencies import Services
from initiator.publishing import FaultHook
from shared.bus.ports import BusMessage, Subscription, SubscriptionSpec, TriggerBus
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.api.observe import Trace

API_KEY = "test-key-1"
SECOND_KEY = "test-key-2"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
CSV = {**AUTH, "Content-Type": "text/csv"}
JSONL = {**AUTH, "Content-Type": "application/x-ndjson"}


class Api:
    """A started app, a client for it, and a subscription that sees every trigger."""

    def __init__(self, app: FastAPI, client: httpx.AsyncClient, watcher: Subscription) -> None:
        self.app = app
        self.client = client
        self._watcher = watcher

    @property
    def services(self) -> Services:
        services: Services = self.app.state.services
        return services

    @property
    def settings(self) -> Settings:
        return self.services.settings

    def trace(self) -> Trace:
        return Trace.take(self.services.storage, self.settings)

    def received_before_the_window(self, batch_id: str) -> None:
        """Date ``batch_id``'s record a second before the duplicate window began."""
        records = self.services.publisher.records
        stored = records.find(batch_id)
        assert stored is not None
        window = timedelta(seconds=self.settings.duplicate_body_window_seconds)
        then = stored.record.received_at - window - timedelta(seconds=1)
        records.save(stored, stored.record.model_copy(update={"received_at": then}))

    def triggers(self, wait: float = 0.2) -> list[BusMessage]:
        """Every trigger published since the last call."""
        received: list[BusMessage] = []
        while batch := self._watcher.receive(timeout=wait if not received else 0.05):
            received.extend(batch)
        return received

    async def post_batch(
        self,
        body: bytes,
        headers: dict[str, str],
        priority: str | None = None,
        params: dict[str, str] | None = None,
    ) -> httpx.Response:
        query = {**({"priority": priority} if priority else {}), **(params or {})}
        return await self.client.post("/batches", content=body, headers=headers, params=query)


@asynccontextmanager
async def started_api(
    settings: Settings,
    *,
    fault: FaultHook | None = None,
    connections: tuple[StorageAccount, TriggerBus] | None = None,
) -> AsyncIterator[Api]:
    """``connections``: storage and bus to use instead of opening them (the caller closes them)."""
    app = create_app(settings, fault=fault, connections=connections)
    async with app.router.lifespan_context(app):
        services: Services = app.state.services
        watcher = services.bus.subscribe(SubscriptionSpec(name="test-watcher"))
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(
                transport=transport, base_url="http://initiator"
            ) as client:
                yield Api(app, client, watcher)
        finally:
            watcher.close()
