"""The relay publishes batch events to Service Bus: the ``batch-events`` topic and its
``tail`` subscription as the emulator's config declares them, through the real SDK."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr
from sqlalchemy import insert, select

from billing.cli.events import TAIL_SUBSCRIPTION
from controller.events.relay import EventRelay
from shared.bus import open_bus
from shared.bus.ports import SubscriptionSpec
from shared.contracts.batch_event import Outcome, batch_event, encode
from shared.domain.transactions import ControlTotals
from shared.settings import Settings
from shared.warehouse import make_engine, upgrade
from shared.warehouse.models import OutboxEvent
from tests.support.sb_broker.emulator_config import EmulatorConfig
from tests.support.servicebus_broker import ServiceBusBroker

PROJECT_CONFIG = Path(__file__).parents[2] / "infra" / "servicebus-emulator" / "config.json"


def test_the_relay_publishes_each_pending_event_to_the_declared_topic(
    servicebus_broker: ServiceBusBroker, tmp_path: Path
) -> None:
    EmulatorConfig.read(PROJECT_CONFIG).declare_on(servicebus_broker)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path,
        servicebus_connection_string=SecretStr(servicebus_broker.connection_string),
    )
    upgrade(settings.resolved_warehouse_url)
    engine = make_engine(settings.resolved_warehouse_url)
    totals = ControlTotals(transactions=2, quantity=5, id_checksum=12345)
    event = batch_event(
        batch_id="b-sb",
        outcome=Outcome.FAILED,
        time=datetime.now(UTC),
        priority="high",
        chunks=2,
        chunks_applied=1,
        failed_chunks=(1,),
        control_totals=totals,
        warehouse_totals=totals,
        reconciled=False,
    )
    with engine.begin() as connection:
        connection.execute(
            insert(OutboxEvent).values(
                event_id=event["id"],
                batch_id="b-sb",
                type=event["type"],
                created_at=datetime.now(UTC),
                body=encode(event).decode(),
            )
        )
    bus = open_bus(settings, settings.events_topic)
    tail = bus.subscribe(SubscriptionSpec(TAIL_SUBSCRIPTION))
    try:
        relay = EventRelay(engine, bus)
        assert relay.publish_pending() == 1
        assert relay.publish_pending() == 0  # marked published: not again

        [message] = tail.receive(10)
    finally:
        bus.close()
    assert json.loads(message.body) == event
    assert message.properties["type"] == "billing.batch.failed"
    assert message.properties["subject"] == "b-sb"
    with engine.connect() as connection:
        assert connection.scalar(select(OutboxEvent.published_at)) is not None
    engine.dispose()
