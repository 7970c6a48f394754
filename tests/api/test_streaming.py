"""The body is parsed in a worker thread: the event loop keeps serving meanwhile."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, Api

pytestmark = pytest.mark.anyio


@pytest.fixture
def backend() -> str:
    return "embedded"


async def test_other_requests_are_served_while_a_batch_is_being_taken(api: Api) -> None:
    body = csv_file(rows(30_000))
    sent = 0
    health_answered_at: list[int] = []

    async def slow_body() -> AsyncIterator[bytes]:
        nonlocal sent
        for start in range(0, len(body), 64 * 1024):
            sent = start
            yield body[start : start + 64 * 1024]
            await anyio.sleep(0)

    async def post() -> None:
        response = await api.client.post(
            "/batches", content=slow_body(), headers={**AUTH, "Content-Type": "text/csv"}
        )
        assert response.status_code == 202, response.text

    async with anyio.create_task_group() as group:
        group.start_soon(post)
        while sent == 0:
            await anyio.sleep(0.001)
        for _ in range(3):
            response = await api.client.get("/healthz")
            assert response.status_code == 200
            health_answered_at.append(sent)

    # The health checks were answered while the body was still arriving.
    assert health_answered_at[-1] < len(body) - 64 * 1024
