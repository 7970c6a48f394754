"""Creating the trigger topic and its subscriptions with the Service Bus administration client.

Used only when :class:`~shared.bus.servicebus.bus.ServiceBusTriggerBus` is given
``manage_entities=True``. The administration client speaks HTTPS to the namespace's
management endpoint and needs Manage rights (the RBAC role *Azure Service Bus Data Owner*,
or a connection string with the Manage claim); the AMQP data plane that sends and receives
cannot create anything. Deployments normally declare the entities instead (Bicep, the
emulator's ``Config.json``) and leave this off.

A subscription gets one correlation-filter rule per filter of the spec
(:attr:`~shared.bus.ports.SubscriptionSpec.rules`): Service Bus delivers a message when any
rule matches, once even if several do. A lone empty filter becomes ``$Default`` (take
everything). An existing subscription whose rules differ has them replaced, so
``subscribe(spec)`` means "as ``spec`` says", as it does on the embedded bus; in between a
message may miss it, which a trigger (a hint) can afford.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from datetime import timedelta

from azure.core.exceptions import ResourceExistsError
from azure.servicebus.management import (
    CorrelationRuleFilter,
    RuleProperties,
    ServiceBusAdministrationClient,
    TrueRuleFilter,
)

from shared.bus.ports import SubscriptionSpec

#: Service Bus refuses an auto-delete-on-idle shorter than five minutes.
MIN_AUTO_DELETE_ON_IDLE = timedelta(minutes=5)
DEFAULT_RULE = "$Default"
#: ``filter`` for the first rule (the name of the single rule before there were several),
#: then ``filter-1``, ``filter-2``...
FILTER_RULE = "filter"


class EntityManager:
    """Creates (idempotently) one topic and the subscriptions asked for on it."""

    def __init__(self, admin: ServiceBusAdministrationClient, topic: str) -> None:
        self._admin = admin
        self._topic = topic

    def ensure_topic(self) -> None:
        with contextlib.suppress(ResourceExistsError):
            self._admin.create_topic(self._topic)

    def ensure_subscription(self, spec: SubscriptionSpec) -> None:
        idle = spec.auto_delete_idle_seconds
        auto_delete = (
            None if idle is None else max(timedelta(seconds=idle), MIN_AUTO_DELETE_ON_IDLE)
        )
        with contextlib.suppress(ResourceExistsError):
            self._admin.create_subscription(self._topic, spec.name, auto_delete_on_idle=auto_delete)
        rules = list(self._admin.list_rules(self._topic, spec.name))
        if _rules_match(rules, spec):
            return
        for rule in rules:
            self._admin.delete_rule(self._topic, spec.name, rule.name)
        if spec.rules == ({},):
            self._admin.create_rule(self._topic, spec.name, DEFAULT_RULE, filter=TrueRuleFilter())
            return
        for index, properties in enumerate(spec.rules):
            wanted = CorrelationRuleFilter(properties=dict(properties))
            name = FILTER_RULE if index == 0 else f"{FILTER_RULE}-{index}"
            self._admin.create_rule(self._topic, spec.name, name, filter=wanted)

    def close(self) -> None:
        self._admin.close()


def _rules_match(rules: list[RuleProperties], spec: SubscriptionSpec) -> bool:
    """Whether the subscription's rules select what ``spec`` asks, whatever their names."""
    if spec.rules == ({},):
        return len(rules) == 1 and isinstance(rules[0].filter, TrueRuleFilter)
    existing: list[str] = []
    for rule in rules:
        if not isinstance(rule.filter, CorrelationRuleFilter):
            return False
        existing.append(_canonical(rule.filter.properties or {}))
    return sorted(existing) == sorted(_canonical(properties) for properties in spec.rules)


def _canonical(properties: Mapping[str, object]) -> str:
    return json.dumps(dict(properties), sort_keys=True, default=str)
