"""Lost responses: storage applied a write, the initiator never heard back.

The answer to the client must agree with what storage holds: a batch that is accepted is
answered 202 (its retry with the same key replays it), one that is not leaves no trace and
frees its Idempotency-Key, and one storage cannot tell about is "outcome unknown", never
"not accepted".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
from azure.core.exceptions import ServiceResponseError

from initiator.idempotency import IDEMPOTENCY_PARTITION
from initiator.publishing import FaultHook, outcome
from shared.bus import open_bus
from shared.contracts.batch_records import BATCH_PARTITION
from shared.contracts.batch_status import BatchStatus
from shared.settings import Settings
from shared.storage import open_storage
from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, Api, started_api
from tests.api.test_crash_safety import _queued, _rows, fail_at
from tests.support.lost_responses import LostResponses

pytestmark = pytest.mark.anyio

BODY = csv_file(rows(45))  # five chunks at the tests' chunk size
CHUNKS = 5

ApiWith = Callable[..., AbstractAsyncContextManager[Api]]


@pytest.fixture
def api_with(settings: Settings) -> ApiWith:
    """The API on storage that loses the responses ``faults`` names."""

    @asynccontextmanager
    async def start(faults: LostResponses, fault: FaultHook | None = None) -> AsyncIterator[Api]:
        storage, bus = open_storage(settings), open_bus(settings)
        connections = (faults.wrap(storage), bus)
        try:
            async with started_api(settings, fault=fault, connections=connections) as api:
                yield api
        finally:
            bus.close()
            storage.close()

    return start


def _headers(key: str) -> dict[str, str]:
    return {**AUTH, "Content-Type": "text/csv", "Idempotency-Key": key}


async def test_a_lost_response_on_the_accepted_write_is_answered_accepted(
    api_with: ApiWith,
) -> None:
    faults = LostResponses(updates_to={BatchStatus.ACCEPTED.value})
    async with api_with(faults) as api:
        response = await api.post_batch(BODY, _headers("order-1"))

        assert faults.lost == ["accepted"]
        assert response.status_code == 202, response.text
        batch_id = response.json()["batch_id"]
        assert _rows(api.services, BATCH_PARTITION) == [batch_id]
        found = api.services.records.find(batch_id)
        assert found is not None
        assert found.record.status is BatchStatus.ACCEPTED
        assert _queued(api.services) == CHUNKS
        assert [t.properties["Priority"] for t in api.triggers()] == ["normal"]
        # The client that did not trust the first answer and retries gets the same batch.
        again = await api.post_batch(BODY, _headers("order-1"))
        assert again.status_code == 200
        assert again.json()["batch_id"] == batch_id
        assert _queued(api.services) == CHUNKS


async def test_a_lost_response_on_the_accepting_write_leaves_no_trace_and_frees_the_key(
    api_with: ApiWith,
) -> None:
    faults = LostResponses(updates_to={BatchStatus.ACCEPTING.value})
    async with api_with(faults) as api:
        response = await api.post_batch(BODY, _headers("order-2"))

        assert faults.lost == ["accepting"]
        assert response.status_code == 503
        assert "not accepted" in response.json()["detail"]
        assert _rows(api.services, BATCH_PARTITION) == []
        assert _rows(api.services, IDEMPOTENCY_PARTITION) == []  # the key is free at once
        container = api.services.storage.container(api.settings.payload_container)
        assert list(container.list()) == []
        assert api.triggers(wait=0.05) == []
        # The retry with the same key is accepted, not locked out with a 409.
        retry = await api.post_batch(BODY, _headers("order-2"))
        assert retry.status_code == 202, retry.text
        assert _rows(api.services, BATCH_PARTITION) == [retry.json()["batch_id"]]


async def test_a_lost_response_on_the_abandoning_write_still_cleans_up(
    api_with: ApiWith,
) -> None:
    """The enqueue fails, and the response to the cleanup's own first write is lost too."""
    faults = LostResponses(updates_to={BatchStatus.ABANDONED.value})
    failure = ServiceResponseError("injected: connection reset while sending")
    async with api_with(faults, fail_at("work_item_sent", failure, 2)) as api:
        response = await api.post_batch(BODY, _headers("order-3"))

        assert faults.lost == ["abandoned"]
        assert response.status_code == 503
        assert "not accepted" in response.json()["detail"]
        assert _rows(api.services, BATCH_PARTITION) == []
        assert _rows(api.services, IDEMPOTENCY_PARTITION) == []


async def test_storage_gone_after_the_accepted_write_answers_outcome_unknown(
    api_with: ApiWith, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outcome, "SETTLE_FIRST_PAUSE_SECONDS", 0.01)
    faults = LostResponses(updates_to={BatchStatus.ACCEPTED.value}, reads_fail_after_loss=True)
    async with api_with(faults) as api:
        response = await api.post_batch(BODY, _headers("order-4"))

        assert response.status_code == 503
        problem = response.json()
        assert problem["title"] == "Batch outcome unknown"
        assert "not accepted" not in problem["detail"]
        batch_id = response.headers["x-batch-id"]
        assert batch_id in problem["detail"]
        # What storage holds: the batch is accepted, and GET tells once storage answers.
        faults.reads_fail_after_loss = False
        status = await api.client.get(f"/batches/{batch_id}", headers=AUTH)
        assert status.status_code == 200
        assert status.json()["status"] == "accepted"


async def test_a_failure_after_the_commit_point_is_answered_accepted(settings: Settings) -> None:
    failure = RuntimeError("injected failure after the record was accepted")
    async with started_api(settings, fault=fail_at("record_accepted", failure)) as api:
        response = await api.post_batch(BODY, _headers("order-5"))

        assert response.status_code == 202, response.text
        assert _rows(api.services, BATCH_PARTITION) == [response.json()["batch_id"]]
        assert _queued(api.services) == CHUNKS
