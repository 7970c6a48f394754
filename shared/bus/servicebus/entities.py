"""Creating the trigger topic and its subscriptions with the Service Bus administration client.

Used only when :class:`~shared.bus.servicebus.bus.ServiceBusTriggerBus` is given
``manage_entities=True``. The administration client speaks HTTPS to the namespace's
management endpoint and needs Manage rights (the RBAC role *Azure Service Bus Data Owner*,
or a connection string with the Manage claim); the AMQP data plane that sends and receives
cannot create anything. Deployments normally declare the entities instead (Bicep, the
emulator's ``Config.json``) and leave this off.

A subscription gets exactly one rule: ``$Default`` (take everything) for an empty filter,
else a correlation filter on the spec's application properties. An existing subscription
whose rule differs has its rules replaced, so ``subscribe(spec)`` means "as ``spec`` says",
as it does on the embedded bus.
"""

from __future__ import annotations

import contextlib
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
        if spec.filter:
            wanted = CorrelationRuleFilter(properties=dict(spec.filter))
            self._admin.create_rule(self._topic, spec.name, FILTER_RULE, filter=wanted)
        else:
            self._admin.create_rule(self._topic, spec.name, DEFAULT_RULE, filter=TrueRuleFilter())

    def close(self) -> None:
        self._admin.close()


def _rules_match(rules: list[RuleProperties], spec: SubscriptionSpec) -> bool:
    if len(rules) != 1:
        return False
    (rule,) = rules
    if not spec.filter:
        return isinstance(rule.filter, TrueRuleFilter)
    return isinstance(rule.filter, CorrelationRuleFilter) and dict(
        rule.filter.properties or {}
    ) == dict(spec.filter)
