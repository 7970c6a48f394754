"""Abandoned batches: the initiator's cleanup reports one on the output queue, and the
controller publishes exactly one ``billing.batch.abandoned`` event for it — on the topic
and to the batch's callback — also when the initiator died between the deciding write and
the report (the sweeper reports it) and when the report arrives twice.

The batch record is made as an intake leaves it (``accepting``), and the initiator's own
cleanup (:mod:`initiator.publishing.cleanup`, :func:`initiator.publishing.sweep_orphans`)
abandons it; the warehouse never has a ``batches`` row for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.core.exceptions import ResourceNotFoundError
from sqlalchemy import Engine, func, select
from standardwebhooks import Webhook

from initiator.idempotency import IdempotencyKeys
from initiator.publishing import sweep_orphans
from initiator.publishing.cleanup import abandon, mark_abandoned, report_abandoned
from shared.bus import open_bus
from shared.bus.ports import Subscription, SubscriptionSpec, TriggerBus
from shared.contracts.batch_event import Outcome, event_id
from shared.contracts.batch_records import BatchRecord, BatchRecords, StoredBatch
from shared.contracts.batch_status import AbandonReason, BatchStatus
from shared.listener.source import poison_queue
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import Batch, OutboxEvent, WebhookDelivery
from tests.controller.batches import control_totals, make_transactions
from tests.controller.conftest import SettingsFactory, WorkerFactory
from tests.controller.test_batch_events import received, wait_published
from tests.support.webhook_server import Received, webhook_server

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # base64 of 24 bytes, a test secret
TIMEOUT = 30.0
TRANSACTIONS = make_transactions(30, seed=5)


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received]]:
    """A real HTTP server on loopback, the batches' callback."""
    with webhook_server() as server:
        yield server


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings(
        events_relay_poll_seconds=0.05,
        webhook_secret=SECRET,
        webhook_retry_schedule=[0, 0.2, 0.2],
        callback_allowed_networks=["127.0.0.0/8"],  # the test's receiver is on loopback
    )


@pytest.fixture
def listening(settings: Settings) -> Iterator[Subscription]:
    """A subscription to every batch event, opened before any is published."""
    bus: TriggerBus = open_bus(settings, settings.events_topic)
    bus.ensure_topic()
    subscription = bus.subscribe(SubscriptionSpec(name="test-abandoned"))
    yield subscription
    subscription.close()
    bus.close()


def records(storage: StorageAccount, settings: Settings) -> BatchRecords:
    return BatchRecords(storage.table(settings.batches_table))


def accepting_batch(
    storage: StorageAccount, settings: Settings, batch_id: str, callback: str | None
) -> StoredBatch:
    """The record of a valid batch whose intake is between ``accepting`` and ``accepted``."""
    now = datetime.now(UTC)
    return records(storage, settings).create(
        BatchRecord(
            batch_id=batch_id,
            status=BatchStatus.ACCEPTING,
            priority="high",
            pricebook_version="book-1",
            received_at=now - timedelta(seconds=2),
            updated_at=now - timedelta(seconds=1),
            transactions=len(TRANSACTIONS),
            chunks=2,
            control_totals=control_totals(TRANSACTIONS),
            callback=callback,
        )
    )


def cleanup(storage: StorageAccount, settings: Settings) -> dict[str, Any]:
    table = storage.table(settings.batches_table)
    return {
        "records": BatchRecords(table),
        "payloads": storage.container(settings.payload_container),
        "keys": IdempotencyKeys(table),
        "results": storage.queue(settings.output_queue),
    }


def wait_drained(storage: StorageAccount, settings: Settings) -> None:
    """Until the output queue holds nothing (an invisible message counts too)."""
    output = storage.queue(settings.output_queue)
    deadline = time.monotonic() + TIMEOUT
    while output.approximate_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert output.approximate_count() == 0


def webhook_requests(received_by: Received, count: int) -> list[tuple[dict[str, str], bytes]]:
    deadline = time.monotonic() + TIMEOUT
    while len(received_by.statuses()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # a further request, if one were coming, would have come by now
    return [(headers, body) for headers, body, _ in received_by.requests]


def poisoned(storage: StorageAccount, settings: Settings) -> int:
    """Messages in the output queue's poison queue (made with its first message)."""
    try:
        return storage.queue(poison_queue(settings.output_queue)).approximate_count()
    except ResourceNotFoundError:
        return 0


def count(engine: Engine, table: Any) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(table)) or 0)


def test_an_abandoned_batch_publishes_one_event_on_the_topic_and_to_its_callback(
    receiver: tuple[str, Received],
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    listening: Subscription,
) -> None:
    url, received_by = receiver
    stored = accepting_batch(storage, settings, "b-gone", callback=url)

    assert abandon(stored, AbandonReason.INTAKE_FAILED, **cleanup(storage, settings))
    assert records(storage, settings).find("b-gone") is None  # the initiator removed it
    start_worker()
    wait_published(warehouse, "b-gone")

    the_id = event_id("b-gone", Outcome.ABANDONED)
    [event] = received(listening)
    assert (event["id"], event["type"], event["subject"]) == (
        the_id,
        "billing.batch.abandoned",
        "b-gone",
    )
    data = event["data"]
    totals = control_totals(TRANSACTIONS)
    assert data["status"] == "abandoned"
    assert data["reason"] == "intake_failed"
    assert data["priority"] == "high"
    assert data["chunks"] == {"total": 2, "applied": 0, "failed": 0}
    assert data["control_totals"] == {
        "transactions": totals.transactions,
        "quantity": totals.quantity,
        "id_checksum": str(totals.id_checksum),
    }
    assert (data["warehouse_totals"], data["reconciled"]) == (None, None)
    [(headers, body)] = webhook_requests(received_by, 1)
    assert headers["webhook-id"] == the_id
    assert Webhook(SECRET).verify(body, headers)["data"] == data
    assert count(warehouse, Batch) == 0  # the warehouse still knows no such batch


def test_an_initiator_dead_after_the_deciding_write_leaves_it_to_the_sweeper(
    receiver: tuple[str, Received],
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    listening: Subscription,
) -> None:
    url, received_by = receiver
    stored = accepting_batch(storage, settings, "b-dead", callback=url)
    # The initiator wins the deciding write, then dies before it reports or removes anything.
    assert mark_abandoned(stored, records(storage, settings), AbandonReason.INTAKE_FAILED)
    assert storage.queue(settings.output_queue).approximate_count() == 0

    assert sweep_orphans(storage, settings, older_than=timedelta(0)) == ["b-dead"]
    assert sweep_orphans(storage, settings, older_than=timedelta(0)) == []
    start_worker()
    wait_published(warehouse, "b-dead")

    [event] = received(listening)
    assert event["id"] == event_id("b-dead", Outcome.ABANDONED)
    assert event["data"]["reason"] == "intake_failed"  # the reason of the deciding write
    [(headers, _)] = webhook_requests(received_by, 1)
    assert headers["webhook-id"] == event["id"]


def test_a_report_sent_again_publishes_no_second_event(
    receiver: tuple[str, Received],
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
    listening: Subscription,
) -> None:
    """The initiator reported the batch and died before deleting its record; the sweeper
    reports it again, after the controller recorded and published the first report."""
    url, received_by = receiver
    stored = accepting_batch(storage, settings, "b-twice", callback=url)
    abandoned = mark_abandoned(stored, records(storage, settings), AbandonReason.INTAKE_FAILED)
    assert abandoned is not None
    output = storage.queue(settings.output_queue)
    assert report_abandoned(abandoned.record, output)
    start_worker()
    wait_published(warehouse, "b-twice")

    assert sweep_orphans(storage, settings, older_than=timedelta(0)) == ["b-twice"]
    wait_drained(storage, settings)

    events = received(listening)
    assert [event["id"] for event in events] == [event_id("b-twice", Outcome.ABANDONED)]
    assert len(webhook_requests(received_by, 1)) == 1
    assert (count(warehouse, OutboxEvent), count(warehouse, WebhookDelivery)) == (1, 1)
    # The copy was taken as a no-op, not failed until poisoned.
    assert poisoned(storage, settings) == 0
