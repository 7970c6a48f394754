"""``/healthz`` (liveness) and ``/readyz`` (readiness) tell the truth about the initiator.

Liveness fails only where a restart helps (the process has nearly run out of descriptors);
readiness also fails while storage has failed every request for longer than its retries
take, and comes back with the first request that reaches storage again.
"""

from __future__ import annotations

import pytest
from azure.core.exceptions import ServiceResponseError

from shared import descriptors
from shared.descriptors import open_descriptors
from shared.outage import OutageClock
from shared.settings import Settings
from tests.api.batch_files import csv_file, rows
from tests.api.harness import CSV, Api, started_api

pytestmark = pytest.mark.anyio


@pytest.fixture
def backend() -> str:
    """What is probed does not depend on the storage backend."""
    return "embedded"


async def test_both_probes_answer_ok_and_need_no_key(api: Api) -> None:
    for path in ("/healthz", "/readyz"):
        response = await api.client.get(path)
        assert (response.status_code, response.json()) == (200, {"status": "ok"}), path


async def test_nearly_out_of_descriptors_is_neither_live_nor_ready(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process's real descriptors against a limit of half their count (a margin for
    # sockets other tests leave to the collector); lowering the real ulimit would starve
    # whatever else runs in the test process at that moment.
    open_now = open_descriptors()
    monkeypatch.setattr(descriptors, "descriptor_limit", lambda: open_now // 2)
    live = await api.client.get("/healthz")
    ready = await api.client.get("/readyz")
    monkeypatch.undo()

    assert live.status_code == 503
    assert "file descriptors open" in live.json()["reason"]
    assert ready.status_code == 503
    assert (await api.client.get("/healthz")).status_code == 200


async def test_a_storage_outage_makes_it_unready_until_storage_answers(settings: Settings) -> None:
    failing = True

    def storage_down(step: str) -> None:
        if failing and step == "work_item_sent":
            raise ServiceResponseError("injected: connection refused")

    async with started_api(settings, fault=storage_down) as api:
        # Any failure at all counts: the window is what a test cannot wait for.
        api.app.state.storage_outage = OutageClock("storage", after_seconds=0.0)
        assert (await api.client.get("/readyz")).status_code == 200
        body = csv_file(rows(3))

        refused = await api.client.post("/batches", content=body, headers=CSV)
        unready = await api.client.get("/readyz")
        live = await api.client.get("/healthz")
        failing = False
        accepted = await api.client.post("/batches", content=body, headers=CSV)
        ready = await api.client.get("/readyz")

    assert refused.status_code == 503
    assert unready.status_code == 503
    assert unready.json()["reason"].startswith("storage failing for")
    assert live.status_code == 200  # a restart would not bring storage back
    assert accepted.status_code == 202
    assert ready.status_code == 200
