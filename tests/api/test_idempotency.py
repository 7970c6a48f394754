"""``Idempotency-Key``: same key and body → the same batch, enqueued once; other body → 409."""

from __future__ import annotations

import anyio
import httpx
import pytest

from shared.contracts.batch_records import BATCH_PARTITION
from tests.api.batch_files import csv_file, row, rows
from tests.api.harness import AUTH, Api

pytestmark = pytest.mark.anyio

BODY = csv_file(rows(25))


def _headers(key: str) -> dict[str, str]:
    return {**AUTH, "Content-Type": "text/csv", "Idempotency-Key": key}


def _batch_ids(api: Api) -> set[str]:
    table = api.services.storage.table(api.settings.batches_table)
    return {entity.row_key for entity in table.query(BATCH_PARTITION)}


async def test_same_key_and_body_is_the_same_batch_without_a_second_enqueue(api: Api) -> None:
    first = await api.post_batch(BODY, _headers("order-42"))
    after_first = api.trace()
    triggers = api.triggers()

    again = await api.post_batch(BODY, _headers("order-42"))

    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json() == first.json()
    assert again.headers["location"] == first.json()["status_url"]
    assert api.trace() == after_first  # no blob, message or row more
    assert len(triggers) == 1
    assert api.triggers(wait=0.05) == []


async def test_same_key_with_another_body_is_409(api: Api) -> None:
    first = await api.post_batch(BODY, _headers("order-43"))
    after_first = api.trace()
    api.triggers()

    other = await api.post_batch(csv_file([*rows(25), row(99)]), _headers("order-43"))

    assert other.status_code == 409
    problem = other.json()
    assert "another request" in problem["title"]
    assert "different body" in problem["detail"]
    assert first.json()["batch_id"] in problem["detail"]
    assert api.trace() == after_first
    assert api.triggers(wait=0.05) == []


async def test_different_keys_make_different_batches(api: Api) -> None:
    one = await api.post_batch(BODY, _headers("a"))
    two = await api.post_batch(BODY, _headers("b"))
    assert (one.status_code, two.status_code) == (202, 202)
    assert one.json()["batch_id"] != two.json()["batch_id"]


async def test_a_rejected_body_does_not_claim_the_key(api: Api) -> None:
    bad = await api.post_batch(csv_file([row(0, sku="NOPE")]), _headers("order-44"))
    good = await api.post_batch(BODY, _headers("order-44"))
    assert (bad.status_code, good.status_code) == (422, 202)


async def test_concurrent_identical_requests_make_one_batch(api: Api) -> None:
    responses: list[httpx.Response] = []

    async def post() -> None:
        responses.append(await api.post_batch(BODY, _headers("order-45")))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(post)

    statuses = sorted(response.status_code for response in responses)
    assert statuses.count(202) == 1
    assert set(statuses) <= {200, 202, 409}  # 409: "still being accepted, retry"
    winner = next(r for r in responses if r.status_code == 202).json()
    assert _batch_ids(api) == {winner["batch_id"]}
    assert sum(api.trace().queue_depths.values()) == winner["chunks"]
    assert len(api.triggers()) == 1
    for response in responses:
        if response.status_code == 200:
            assert response.json() == winner
        if response.status_code == 409:
            assert response.headers["retry-after"] == "1"
