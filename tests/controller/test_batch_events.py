"""Batch events: one outbox row per outcome, published at least once with one id, also when
the controller dies between the close and the publish (controller.events)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from shared.bus import open_bus
from shared.bus.ports import Subscription, SubscriptionSpec, TriggerBus
from shared.contracts.batch_event import Outcome, event_id
from shared.contracts.batch_status import BatchStatus
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import OutboxEvent
from tests.controller.batches import control_totals, make_transactions, publish_batch
from tests.controller.conftest import SettingsFactory, WorkerFactory, wait_until_closed
from tests.controller.killed_controller import settings_to_json

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings(events_relay_poll_seconds=0.1)


@pytest.fixture
def events_bus(settings: Settings) -> Iterator[TriggerBus]:
    bus = open_bus(settings, settings.events_topic)
    bus.ensure_topic()
    yield bus
    bus.close()


@pytest.fixture
def listening(events_bus: TriggerBus) -> Iterator[Subscription]:
    """A subscription to every batch event, opened before any is published."""
    subscription = events_bus.subscribe(SubscriptionSpec(name="test-events"))
    yield subscription
    subscription.close()


def outbox_rows(engine: Engine, batch_id: str) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(select(OutboxEvent).where(OutboxEvent.batch_id == batch_id)))


def wait_published(engine: Engine, batch_id: str) -> Any:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        rows = outbox_rows(engine, batch_id)
        if rows and rows[0].published_at is not None:
            return rows[0]
        time.sleep(0.05)
    raise AssertionError(f"the event of {batch_id} was not published in {TIMEOUT} s")


def received(subscription: Subscription, *, settle: float = 1.0) -> list[dict[str, Any]]:
    """Every event on the subscription until it has been quiet for ``settle`` seconds."""
    events: list[dict[str, Any]] = []
    while batch := subscription.receive(settle):
        events += [json.loads(message.body) for message in batch]
    return events


def run_killed_controller(settings: Settings, when: str) -> None:
    child = subprocess.run(
        [sys.executable, "-m", "tests.controller.killed_relay", settings_to_json(settings), when],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -9, child.stderr.decode(errors="replace")[-3000:]


def test_a_completed_batch_publishes_one_cloudevent_with_its_totals(
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    listening: Subscription,
) -> None:
    transactions = make_transactions(60, seed=31)
    batch = publish_batch(storage, settings, "b-event", transactions, chunk_size=20)
    output = storage.queue(settings.output_queue)
    for message in batch.results:
        output.send(message.to_text())

    start_worker()
    wait_until_closed(storage, settings, batch.batch_id)
    wait_published(warehouse, batch.batch_id)

    [event] = received(listening)
    assert event["specversion"] == "1.0"
    assert event["id"] == event_id("b-event", Outcome.COMPLETED)
    assert (event["type"], event["subject"]) == ("billing.batch.completed", "b-event")
    assert event["datacontenttype"] == "application/json"
    data = event["data"]
    totals = control_totals(transactions)
    assert (
        data["control_totals"]
        == data["warehouse_totals"]
        == {
            "transactions": totals.transactions,
            "quantity": totals.quantity,
            "id_checksum": str(totals.id_checksum),
        }
    )
    assert data["reconciled"] is True
    assert data["chunks"] == {"total": 3, "applied": 3, "failed": 0}


def test_a_failed_batch_publishes_a_failed_event(
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    listening: Subscription,
) -> None:
    batch = publish_batch(storage, settings, "b-fails", make_transactions(60), chunk_size=20)
    output = storage.queue(settings.output_queue)
    output.send(batch.chunk_failed(1).to_text())
    for message in batch.results:
        if message.chunk != 1:
            output.send(message.to_text())

    start_worker()
    assert wait_until_closed(storage, settings, batch.batch_id).status is BatchStatus.FAILED
    wait_published(warehouse, batch.batch_id)

    [event] = received(listening)
    assert event["type"] == "billing.batch.failed"
    assert event["data"]["failed_chunks"] == [1]
    assert event["data"]["reconciled"] is False


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_controller_killed_around_the_publish_gives_one_event_id_per_outcome(
    when: str,
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    listening: Subscription,
) -> None:
    """Killed ``before`` the publish: the close and its outbox row are committed, nothing
    is on the topic; the next controller publishes it. Killed ``after``: the event is on
    the topic but not marked; it is published again, with the same id."""
    batch = publish_batch(storage, settings, "b-crash", make_transactions(60), chunk_size=20)
    output = storage.queue(settings.output_queue)
    for message in batch.results:
        output.send(message.to_text())

    run_killed_controller(settings, when)

    [row] = outbox_rows(warehouse, batch.batch_id)
    assert row.published_at is None
    assert row.event_id == event_id("b-crash", Outcome.COMPLETED)

    start_worker()
    wait_until_closed(storage, settings, batch.batch_id)
    wait_published(warehouse, batch.batch_id)

    events = received(listening)
    assert [event["id"] for event in events] == [row.event_id] * (2 if when == "after" else 1)
    assert len(outbox_rows(warehouse, batch.batch_id)) == 1
