"""Subscription rules as the entity manager writes them with the administration client.

The test broker speaks AMQP only, not the administration client's HTTPS, so these tests
hand the manager a stand-in administration client that keeps rules in a dict, and check
what it was asked to do: one correlation rule per filter of the spec (Service Bus ORs a
subscription's rules), nothing when the rules already say that, a replacement when not.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from azure.core.exceptions import ResourceExistsError
from azure.servicebus.management import (
    CorrelationRuleFilter,
    RuleProperties,
    ServiceBusAdministrationClient,
    SqlRuleFilter,
    TrueRuleFilter,
)

from shared.bus.ports import SubscriptionSpec
from shared.bus.servicebus.entities import EntityManager

TOPIC = "triggers"
INSTANCE = SubscriptionSpec(
    "proc-1",
    rules=({"Priority": "high"}, {"Priority": "low"}, {"Kind": "gate"}),
    auto_delete_idle_seconds=60,
)


class FakeAdministration:
    """The administration calls the manager makes, on rules kept in memory."""

    def __init__(self) -> None:
        self.rules: dict[str, dict[str, Any]] = {}
        self.auto_delete: dict[str, timedelta | None] = {}
        self.changes: list[str] = []

    def create_subscription(
        self, topic: str, name: str, *, auto_delete_on_idle: timedelta | None = None
    ) -> None:
        if name in self.rules:
            raise ResourceExistsError(f"{topic}/{name} exists")
        self.rules[name] = {"$Default": TrueRuleFilter()}  # as Service Bus creates it
        self.auto_delete[name] = auto_delete_on_idle

    def list_rules(self, topic: str, subscription: str) -> list[RuleProperties]:
        return [
            RuleProperties(name, filter=rule_filter, action=None, created_at_utc=None)
            for name, rule_filter in self.rules[subscription].items()
        ]

    def delete_rule(self, topic: str, subscription: str, rule: str) -> None:
        self.changes.append(f"delete {rule}")
        del self.rules[subscription][rule]

    def create_rule(self, topic: str, subscription: str, rule: str, *, filter: Any) -> None:
        self.changes.append(f"create {rule}")
        self.rules[subscription][rule] = filter

    def selected_by(self, subscription: str) -> list[dict[str, Any]]:
        return [
            dict(rule.properties or {})
            for rule in self.rules[subscription].values()
            if isinstance(rule, CorrelationRuleFilter)
        ]


def manager(admin: FakeAdministration) -> EntityManager:
    return EntityManager(cast(ServiceBusAdministrationClient, admin), TOPIC)


def test_a_subscription_gets_one_correlation_rule_per_filter() -> None:
    admin = FakeAdministration()
    manager(admin).ensure_subscription(INSTANCE)

    assert sorted(admin.rules["proc-1"]) == ["filter", "filter-1", "filter-2"]
    assert admin.selected_by("proc-1") == [dict(rule) for rule in INSTANCE.rules]
    assert admin.auto_delete["proc-1"] == timedelta(minutes=5)  # Service Bus's minimum


def test_rules_that_already_say_the_same_are_left_alone() -> None:
    admin = FakeAdministration()
    manager(admin).ensure_subscription(INSTANCE)
    admin.changes.clear()
    same_in_another_order = SubscriptionSpec(
        "proc-1", rules=tuple(reversed(INSTANCE.rules)), auto_delete_idle_seconds=60
    )

    manager(admin).ensure_subscription(same_in_another_order)

    assert admin.changes == []


def test_rules_that_differ_are_replaced() -> None:
    admin = FakeAdministration()
    admin.create_subscription(TOPIC, "proc-1")
    admin.rules["proc-1"] = {"old": SqlRuleFilter("Priority = 'high'")}

    manager(admin).ensure_subscription(INSTANCE)

    assert admin.changes[0] == "delete old"
    assert admin.selected_by("proc-1") == [dict(rule) for rule in INSTANCE.rules]
    assert len(admin.rules["proc-1"]) == len(INSTANCE.rules)


def test_an_empty_filter_keeps_the_default_rule_that_takes_everything() -> None:
    admin = FakeAdministration()
    manager(admin).ensure_subscription(SubscriptionSpec("watcher"))

    assert admin.changes == []  # created with $Default, which is what was asked
    assert list(admin.rules["watcher"]) == ["$Default"]
