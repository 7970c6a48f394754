"""An initiator in this process, reached through its ASGI app: the intake benchmarks' rig.

No server and no socket: ``POST /batches`` goes through the FastAPI app and its lifespan
(the intake helpers included) on the embedded backend, so what is timed is the intake
itself, and the storage meter counts only its requests.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from initiator.app import create_app
from shared import meter
from shared.settings import Settings

API_KEY = "bench-key"


def bench_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings for an initiator on the embedded backend in ``data_dir``, no ``.env`` read."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=data_dir,
        api_keys=[API_KEY],  # type: ignore[list-item]
        **overrides,
    )


@asynccontextmanager
async def asgi_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an initiator app started (lifespan and all) in this process."""
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            yield client


async def timed_post(
    client: httpx.AsyncClient, body: bytes, params: Mapping[str, str] | None = None
) -> tuple[float, dict[str, int]]:
    """One ``POST /batches`` that must be accepted: its seconds and the storage requests
    metered meanwhile, by kind."""
    before = meter.snapshot()
    started = time.perf_counter()
    response = await client.post(
        "/batches",
        content=body,
        params=params or {},
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "text/csv"},
        timeout=None,
    )
    seconds = time.perf_counter() - started
    requests = meter.diff(meter.snapshot(), before)
    response.raise_for_status()
    return seconds, requests
