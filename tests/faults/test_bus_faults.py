"""The trigger bus port under faults: what a failed, timed-out or lost call leaves behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.servicebus.exceptions import (
    OperationTimeoutError,
    ServiceBusError,
    ServiceBusServerBusyError,
)

from shared.bus.embedded import EmbeddedTriggerBus
from shared.bus.ports import SubscriptionSpec
from shared.faults.bus import FaultyTriggerBus
from tests.faults.scripted import LOST, TIMEOUT, ScriptedPlan, status

SPEC = SubscriptionSpec(name="everything")


@pytest.fixture
def bus(tmp_path: Path) -> tuple[FaultyTriggerBus, EmbeddedTriggerBus, ScriptedPlan]:
    inner = EmbeddedTriggerBus(tmp_path / "bus", "triggers")
    inner.ensure_topic()
    plan = ScriptedPlan()
    return FaultyTriggerBus(inner, plan), inner, plan


def test_a_failed_or_timed_out_publish_publishes_nothing(
    bus: tuple[FaultyTriggerBus, EmbeddedTriggerBus, ScriptedPlan],
) -> None:
    faulty, inner, plan = bus
    listening = inner.subscribe(SPEC)
    plan.next(status(503), status(500), TIMEOUT)
    for error in (ServiceBusServerBusyError, ServiceBusError, OperationTimeoutError):
        with pytest.raises(error):
            faulty.publish(b"trigger", {})
    assert listening.receive(0.1) == []
    inner.close()


def test_a_lost_publish_is_published_and_a_lost_receive_takes_the_messages(
    bus: tuple[FaultyTriggerBus, EmbeddedTriggerBus, ScriptedPlan],
) -> None:
    faulty, inner, plan = bus
    subscription = faulty.subscribe(SPEC)
    plan.next(LOST)
    with pytest.raises(OperationTimeoutError):
        faulty.publish(b"trigger", {})
    plan.next(LOST)
    with pytest.raises(OperationTimeoutError):
        subscription.receive(1.0)
    assert subscription.receive(0.1) == []  # the trigger went with the lost answer
    inner.close()


def test_a_lost_subscribe_closes_what_it_opened(
    bus: tuple[FaultyTriggerBus, EmbeddedTriggerBus, ScriptedPlan],
) -> None:
    faulty, inner, plan = bus
    plan.next(LOST)
    with pytest.raises(OperationTimeoutError):
        faulty.subscribe(SPEC)
    inner.publish(b"trigger", {})
    again = faulty.subscribe(SPEC)  # the subscription itself was made: it kept the trigger
    assert [m.body for m in again.receive(1.0)] == [b"trigger"]
    inner.close()
