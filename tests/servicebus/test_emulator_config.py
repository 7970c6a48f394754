"""The compose stand-in declares exactly what the emulator's Config.json declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage

from billing.cli.events import TAIL_SUBSCRIPTION
from tests.support.sb_broker.emulator_config import (
    EmulatorConfig,
    EmulatorConfigError,
    parse_duration,
)
from tests.support.servicebus_broker import ServiceBusBroker

PROJECT_CONFIG = Path(__file__).parents[2] / "infra" / "servicebus-emulator" / "config.json"


def test_the_projects_config_declares_the_trigger_topic_and_its_subscriptions() -> None:
    config = EmulatorConfig.read(PROJECT_CONFIG)
    assert config.namespace == "sbemulatorns"
    assert config.topics == ("triggers", "batch-events")
    declared = {s.name: s for s in config.subscriptions if s.topic == "triggers"}
    assert sorted(declared) == [
        "controller",
        "processors-high",
        "processors-low",
        "processors-normal",
    ]
    assert declared["processors-high"].filters == ({"Priority": "high"}, {"Kind": "gate"})
    assert declared["controller"].filters == ({"Kind": "work"},)
    assert declared["controller"].lock_duration == 60.0
    assert declared["controller"].max_delivery_count == 10


def test_the_events_topic_has_the_subscription_billing_events_tail_reads() -> None:
    config = EmulatorConfig.read(PROJECT_CONFIG)
    [tail] = [s for s in config.subscriptions if s.topic == "batch-events"]
    assert tail.name == TAIL_SUBSCRIPTION
    assert tail.filters == ({},)  # every event


def test_declared_filters_route_messages_over_the_wire() -> None:
    """Through the real SDK: a high trigger reaches processors-high only, a gate all three."""
    broker = ServiceBusBroker()
    EmulatorConfig.read(PROJECT_CONFIG).declare_on(broker)
    with broker, ServiceBusClient.from_connection_string(broker.connection_string) as client:
        with client.get_topic_sender("triggers") as sender:
            sender.send_messages(
                ServiceBusMessage(b"w", application_properties={"Priority": "high", "Kind": "work"})
            )
            sender.send_messages(ServiceBusMessage(b"g", application_properties={"Kind": "gate"}))
        counts = {
            name: len(broker.messages("triggers", name))
            for name in ("processors-high", "processors-normal", "processors-low", "controller")
        }
    assert counts == {
        "processors-high": 2,
        "processors-normal": 1,
        "processors-low": 1,
        "controller": 1,
    }
    assert not broker.errors


def _config(subscription: dict[str, Any], queues: list[Any] | None = None) -> dict[str, Any]:
    return {
        "UserConfig": {
            "Namespaces": [
                {
                    "Name": "sbemulatorns",
                    "Queues": queues or [],
                    "Topics": [{"Name": "t", "Subscriptions": [subscription]}],
                }
            ]
        }
    }


def test_a_subscription_without_rules_takes_everything() -> None:
    config = EmulatorConfig.parse(_config({"Name": "all"}))
    assert config.subscriptions[0].filters == ({},)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (_config({"Name": "s"}, queues=[{"Name": "q"}]), "queues are not supported"),
        (
            _config({"Name": "s", "Rules": [{"Name": "r", "Properties": {"FilterType": "Sql"}}]}),
            "only correlation filters",
        ),
        (
            _config(
                {
                    "Name": "s",
                    "Rules": [
                        {
                            "Name": "r",
                            "Properties": {
                                "FilterType": "Correlation",
                                "CorrelationFilter": {"Label": "x"},
                            },
                        }
                    ],
                }
            ),
            "system-property filters",
        ),
        ({"UserConfig": {"Namespaces": []}}, "must hold one"),
    ],
)
def test_what_the_stand_in_cannot_declare_is_refused(document: Any, message: str) -> None:
    with pytest.raises(EmulatorConfigError, match=message):
        EmulatorConfig.parse(document)


def test_durations() -> None:
    assert parse_duration("PT1M") == 60
    assert parse_duration("PT1H5M30S") == 3930
    assert parse_duration("P1D") == 86400
    with pytest.raises(EmulatorConfigError):
        parse_duration("1 minute")
