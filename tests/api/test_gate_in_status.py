"""The release gate in a batch's status: held or released, and the wait for a release
reported apart from processing time (``waiting_for_release_seconds``,
``processing_seconds``), through the API over ASGI and in the view itself."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from initiator.schemas import BatchStatusView
from shared.contracts.batch_records import BatchRecord
from shared.contracts.batch_status import BatchStatus
from shared.coordination.gate import GateHistory, read_gate_history
from tests.api.batch_files import csv_file, rows
from tests.api.harness import AUTH, CSV, Api

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def record(status: BatchStatus, *, completed: float | None = None) -> BatchRecord:
    return BatchRecord(
        batch_id="b",
        status=status,
        priority="normal",
        pricebook_version="v1",
        received_at=at(0),
        accepted_at=at(1),
        completed_at=None if completed is None else at(completed),
        transactions=1000,
        chunks=4,
    )


def test_a_closed_batch_reports_its_wait_for_the_release_apart_from_processing() -> None:
    # Held from before the batch came until 9 s in; it closed at 10 s.
    gate = GateHistory(released=True, holds=((at(-60), at(9)),))
    timings = BatchStatusView.of(record(BatchStatus.COMPLETED, completed=10), gate).timings
    assert timings.end_to_end_seconds == 10
    assert timings.waiting_for_release_seconds == 8  # from acceptance (1 s) to the release
    assert timings.processing_seconds == 2
    assert timings.processing_throughput == 500
    assert timings.throughput == 100  # end to end, as it always was


def test_an_open_batch_under_a_held_gate_says_it_waits() -> None:
    gate = GateHistory(released=False, holds=((at(-5), at(-3)), (at(4), None)))
    view = BatchStatusView.of(record(BatchStatus.ACCEPTED), gate, now=at(7))
    assert view.gate == "held"
    assert view.waiting_for_release is True
    assert view.timings.waiting_for_release_seconds == 3  # the earlier spell ended before


def test_a_gate_never_held_waits_for_nothing() -> None:
    view = BatchStatusView.of(record(BatchStatus.COMPLETED, completed=10))
    assert view.gate == "released"
    assert view.waiting_for_release is False
    assert view.timings.waiting_for_release_seconds == 0
    assert view.timings.processing_seconds == 10


@pytest.fixture
def backend() -> str:
    return "embedded"


async def status_until(api: Api, batch_id: str, gate: str, timeout: float = 10.0) -> dict[str, Any]:
    """The gate is read through the readings' cache (a couple of seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        body: dict[str, Any] = (await api.client.get(f"/batches/{batch_id}", headers=AUTH)).json()
        if body["gate"] == gate or time.monotonic() > deadline:
            return body
        await asyncio.sleep(0.2)


@pytest.mark.anyio
async def test_the_status_shows_the_gate_held_then_released(api: Api) -> None:
    assert (await api.client.post("/control/hold", headers=AUTH)).json() == {"released": False}
    accepted = await api.client.post("/batches", content=csv_file(rows(25)), headers=CSV)
    batch_id = accepted.json()["batch_id"]

    held = await status_until(api, batch_id, "held")
    assert held["gate"] == "held"
    assert held["status"] == "accepted"
    assert held["waiting_for_release"] is True

    await api.client.post("/control/release", headers=AUTH)
    released = await status_until(api, batch_id, "released")
    assert released["waiting_for_release"] is False
    assert released["timings"]["waiting_for_release_seconds"] > 0
    # The flag keeps the spell it was held, closed by the release.
    control = api.services.storage.container(api.settings.control_container)
    [(held_at, released_at)] = read_gate_history(control).holds
    assert released_at is not None
    assert held_at < released_at
