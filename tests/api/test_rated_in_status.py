"""A batch's status counts the chunks rated so far, not only those the controller applied:
between a processor's result and the controller applying it, progress is shown as it
happens (``chunks.rated``). The chunks are rated by the processor's own rating step, with
no controller running, so every rated chunk is still on its way to the warehouse."""

from __future__ import annotations

import pytest

from shared import meter
from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, CSV, Api
from tests.support import rating


def rate_work_items(api: Api, count: int) -> int:
    return rating.rate_work_items(api.services.storage, api.settings, count)


@pytest.mark.anyio
async def test_rated_chunks_show_before_the_controller_applies_them(api: Api) -> None:
    accepted = await api.post_batch(csv_file(rows(35)), CSV)  # chunks of 10: 4 of them
    batch_id = accepted.json()["batch_id"]
    before = (await api.client.get(f"/batches/{batch_id}", headers=AUTH)).json()["chunks"]
    assert before == {"total": 4, "rated": 0, "applied": 0, "failed": 0, "in_flight": 4}

    assert rate_work_items(api, 3) == 3
    listings = meter.snapshot().get("blob.list@status", 0)
    status = (await api.client.get(f"/batches/{batch_id}", headers=AUTH)).json()
    assert status["status"] == "accepted"
    assert status["chunks"] == {"total": 4, "rated": 3, "applied": 0, "failed": 0, "in_flight": 4}
    # One listing of the batch's results, counted as made for an onlooker.
    assert meter.snapshot().get("blob.list@status", 0) == listings + 1


@pytest.mark.anyio
async def test_the_dashboards_batches_carry_the_rated_chunks(api: Api) -> None:
    accepted = await api.post_batch(csv_file(rows(25)), CSV)  # 3 chunks
    batch_id = accepted.json()["batch_id"]
    assert rate_work_items(api, 2) == 2
    readings = api.app.state.readings
    [view] = [b for b in readings.batches().recent if b.batch_id == batch_id]
    assert (view.chunks.rated, view.chunks.applied, view.chunks.total) == (2, 0, 3)
