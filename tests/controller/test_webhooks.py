"""Webhook deliveries of batch events: signed per Standard Webhooks, retried on the schedule
until the receiver takes them, every attempt recorded (controller.events.webhooks)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select
from standardwebhooks import Webhook

from controller.events.webhooks import RetryPolicy
from shared.contracts.batch_event import Outcome, event_id
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import DeliveryAttempt, WebhookDelivery
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.conftest import SettingsFactory, WorkerFactory, wait_until_closed
from tests.support.webhook_server import Received, webhook_server

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # base64 of 24 bytes, a test secret
TIMEOUT = 30.0


def deliveries(engine: Engine) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(select(WebhookDelivery)))


def attempt_statuses(engine: Engine, delivery_id: int) -> list[int | None]:
    query = (
        select(DeliveryAttempt.status_code)
        .where(DeliveryAttempt.delivery_id == delivery_id)
        .order_by(DeliveryAttempt.attempt_id)
    )
    with engine.connect() as connection:
        return list(connection.scalars(query))


def wait_for(received: Received, count: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while len(received.statuses()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(received.statuses()) >= count, received.statuses()


def wait_delivered(engine: Engine) -> Any:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = deliveries(engine)
        if found and found[0].state == "delivered":
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"not delivered in {TIMEOUT} s: {deliveries(engine)}")


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[tuple[str, Received]]:
    """A real HTTP server on loopback answering 500 to the first ``param`` requests (3)."""
    with webhook_server(fail_first=getattr(request, "param", 3)) as server:
        yield server


@pytest.fixture
def subscribed_by() -> str:
    return "setting"


@pytest.fixture
def settings(
    make_settings: SettingsFactory, receiver: tuple[str, Received], subscribed_by: str
) -> Settings:
    url, _ = receiver
    return make_settings(
        events_relay_poll_seconds=0.05,
        webhook_secret=SECRET,
        webhook_retry_schedule=[0, 0.2, 0.2, 0.2, 0.2],
        webhook_urls=[url] if subscribed_by == "setting" else [],
        callback_allowed_networks=["127.0.0.0/8"],  # the test's receiver is on loopback
    )


@pytest.mark.parametrize("subscribed_by", ["setting", "callback"])
def test_a_receiver_that_fails_three_times_gets_the_signed_event_on_the_fourth_attempt(
    subscribed_by: str,
    receiver: tuple[str, Received],
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
) -> None:
    url, received = receiver
    callback = url if subscribed_by == "callback" else None
    batch = publish_batch(
        storage, settings, "b-hook", make_transactions(40), chunk_size=20, callback=callback
    )
    for message in batch.results:
        storage.queue(settings.output_queue).send(message.to_text())

    start_worker()
    wait_until_closed(storage, settings, batch.batch_id)
    delivery = wait_delivered(warehouse)
    time.sleep(0.5)  # a fifth request, if one were coming, would have come by now

    assert received.statuses() == [500, 500, 500, 204]
    the_id = event_id("b-hook", Outcome.COMPLETED)
    for headers, body, _ in received.requests:
        # The same id on every attempt; each one signed afresh, and valid.
        assert headers["webhook-id"] == the_id
        event = Webhook(SECRET).verify(body, headers)
        assert (event["id"], event["subject"]) == (the_id, "b-hook")
        assert event["data"]["reconciled"] is True
    assert json.loads(received.requests[-1][1])["type"] == "billing.batch.completed"
    assert (delivery.url, delivery.attempts) == (url, 4)
    assert attempt_statuses(warehouse, delivery.delivery_id) == [500, 500, 500, 204]


@pytest.mark.parametrize("receiver", [100], indirect=True)
def test_a_delivery_gives_up_at_the_end_of_its_schedule(
    receiver: tuple[str, Received],
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    start_worker: WorkerFactory,
) -> None:
    _, received = receiver
    batch = publish_batch(storage, settings, "b-down", make_transactions(20), chunk_size=20)
    storage.queue(settings.output_queue).send(batch.results[0].to_text())

    start_worker()
    wait_for(received, 5)
    deadline = time.monotonic() + TIMEOUT
    while deliveries(warehouse)[0].state != "gave_up" and time.monotonic() < deadline:
        time.sleep(0.05)

    [delivery] = deliveries(warehouse)
    assert (delivery.state, delivery.attempts) == ("gave_up", 5)
    assert received.statuses() == [500] * 5


def test_the_default_schedule_retries_for_more_than_a_day_with_jitter() -> None:
    policy = RetryPolicy(tuple(Settings(_env_file=None).webhook_retry_schedule), jitter=0.2)  # type: ignore[call-arg]

    waits = [policy.wait_before(attempt) for attempt in range(len(policy.schedule))]

    assert all(
        wait is not None and wait >= base for wait, base in zip(waits, policy.schedule, strict=True)
    )
    assert sum(policy.schedule) > 24 * 3600  # Standard Webhooks' schedule: over 27 hours
    assert policy.wait_before(len(policy.schedule)) is None
    assert len({policy.wait_before(3) for _ in range(20)}) > 1  # jittered
