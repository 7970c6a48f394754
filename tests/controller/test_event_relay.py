"""The relay on its own: a publish that fails leaves the event pending for the next round,
and an event is marked (and its webhooks queued) once, however many relays publish it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, select

from controller.events.relay import EventRelay
from controller.events.webhooks import RetryPolicy, WebhookSender
from shared.bus.ports import Subscription, SubscriptionSpec
from shared.contracts.batch_event import Outcome, batch_event, encode
from shared.warehouse import make_engine, upgrade
from shared.warehouse.models import OutboxEvent, WebhookDelivery

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class RecordingBus:
    """A topic that takes publishes (or refuses the next ``failures`` of them)."""

    topic = "batch-events"

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.published: list[tuple[bytes, Mapping[str, str]]] = []

    def ensure_topic(self) -> None:
        pass

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("the bus is away")
        self.published.append((body, properties))

    def subscribe(self, spec: SubscriptionSpec) -> Subscription:
        raise NotImplementedError

    def close(self) -> None:
        pass


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'warehouse.sqlite3'}"
    upgrade(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def pending_event(engine: Engine, batch_id: str = "b-1") -> str:
    event = batch_event(
        batch_id=batch_id,
        outcome=Outcome.COMPLETED,
        time=datetime.now(UTC),
        priority="normal",
        chunks=1,
        chunks_applied=1,
        failed_chunks=(),
        control_totals=None,
        warehouse_totals=None,
        reconciled=True,
    )
    with engine.begin() as connection:
        connection.execute(
            insert(OutboxEvent).values(
                event_id=event["id"],
                batch_id=batch_id,
                type=event["type"],
                created_at=datetime.now(UTC),
                body=encode(event).decode(),
            )
        )
    return str(event["id"])


def published_at(engine: Engine) -> list[datetime | None]:
    with engine.connect() as connection:
        return list(connection.scalars(select(OutboxEvent.published_at)))


def test_an_event_the_bus_refused_stays_pending_and_goes_out_next_round(engine: Engine) -> None:
    pending_event(engine)
    bus = RecordingBus(failures=1)
    relay = EventRelay(engine, bus)

    with pytest.raises(ConnectionError):
        relay.run_once()
    assert published_at(engine) == [None]
    assert bus.published == []

    assert relay.run_once() == 1
    assert len(bus.published) == 1
    assert published_at(engine)[0] is not None
    assert relay.run_once() == 0  # marked: not published again


def test_two_relays_publishing_one_event_queue_its_webhooks_once(engine: Engine) -> None:
    event_id = pending_event(engine)
    sender = WebhookSender(engine, SECRET, RetryPolicy((3600.0,)))
    first, second = (
        EventRelay(engine, RecordingBus(), webhooks=sender, webhook_urls=["https://a.example/h"])
        for _ in range(2)
    )
    # Both saw the event pending and published it; then each marks it.
    first._publish(event_id, "b-1", "billing.batch.completed", "{}")
    second._publish(event_id, "b-1", "billing.batch.completed", "{}")
    first._mark_published(event_id, "b-1")
    second._mark_published(event_id, "b-1")

    with engine.connect() as connection:
        urls = list(connection.scalars(select(WebhookDelivery.url)))
    assert urls == ["https://a.example/h"]
    assert first.published + second.published == 1
    sender.close()
