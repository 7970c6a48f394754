"""Declare on the test broker exactly what a Service Bus emulator ``Config.json`` declares.

The emulator reads its entities from ``/ServiceBus_Emulator/ConfigFiles/Config.json``
(schema: one namespace, its queues and topics, each topic's subscriptions with their
``MaxDeliveryCount``, ``LockDuration`` and rules). The compose stand-in
(:mod:`tests.support.servicebus_standin`) reads the same file, so the compose file and
``infra/servicebus-emulator/config.json`` are used unchanged in CI. What the broker cannot
honour (queues, SQL filters, correlation filters on system properties) is refused with an
error naming it rather than silently skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.sb_broker.entities import DEFAULT_LOCK_DURATION, DEFAULT_MAX_DELIVERY_COUNT
from tests.support.servicebus_broker import ServiceBusBroker

#: ISO 8601 durations as the emulator's config writes them: PT1M, PT30S, PT1H5M, P1D.
_DURATION = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$"
)


class EmulatorConfigError(ValueError):
    """The config asks for something the stand-in cannot declare (or is malformed)."""


@dataclass(frozen=True)
class DeclaredSubscription:
    topic: str
    name: str
    filters: tuple[dict[str, str], ...]
    max_delivery_count: int = DEFAULT_MAX_DELIVERY_COUNT
    lock_duration: float = DEFAULT_LOCK_DURATION


@dataclass(frozen=True)
class EmulatorConfig:
    namespace: str
    topics: tuple[str, ...]
    subscriptions: tuple[DeclaredSubscription, ...] = field(default=())

    @classmethod
    def read(cls, path: Path) -> EmulatorConfig:
        try:
            document = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise EmulatorConfigError(f"{path}: {error}") from error
        return cls.parse(document, where=str(path))

    @classmethod
    def parse(cls, document: Any, *, where: str = "Config.json") -> EmulatorConfig:
        try:
            (namespace,) = document["UserConfig"]["Namespaces"]
        except (KeyError, TypeError, ValueError) as error:
            raise EmulatorConfigError(f"{where}: UserConfig.Namespaces must hold one") from error
        if namespace.get("Queues"):
            raise EmulatorConfigError(f"{where}: queues are not supported by the stand-in")
        topics: list[str] = []
        subscriptions: list[DeclaredSubscription] = []
        for topic in namespace.get("Topics", []):
            topics.append(topic["Name"])
            for subscription in topic.get("Subscriptions", []):
                subscriptions.append(
                    _subscription(topic["Name"], subscription, f"{where}: {topic['Name']}")
                )
        return cls(namespace["Name"], tuple(topics), tuple(subscriptions))

    def declare_on(self, broker: ServiceBusBroker) -> None:
        for topic in self.topics:
            broker.add_topic(topic)
        for subscription in self.subscriptions:
            broker.add_subscription(
                subscription.topic,
                subscription.name,
                filters=subscription.filters,
                max_delivery_count=subscription.max_delivery_count,
                lock_duration=subscription.lock_duration,
            )


def _subscription(topic: str, declared: dict[str, Any], where: str) -> DeclaredSubscription:
    name = declared["Name"]
    properties = declared.get("Properties", {})
    filters = tuple(_rule_filter(rule, f"{where}/{name}") for rule in declared.get("Rules", []))
    return DeclaredSubscription(
        topic=topic,
        name=name,
        # no rule: the default rule, which takes every message
        filters=filters or ({},),
        max_delivery_count=int(properties.get("MaxDeliveryCount", DEFAULT_MAX_DELIVERY_COUNT)),
        lock_duration=(
            parse_duration(properties["LockDuration"])
            if "LockDuration" in properties
            else DEFAULT_LOCK_DURATION
        ),
    )


def _rule_filter(rule: dict[str, Any], where: str) -> dict[str, str]:
    properties = rule.get("Properties", {})
    kind = properties.get("FilterType")
    if kind != "Correlation":
        raise EmulatorConfigError(f"{where}: rule {rule.get('Name')!r}: only correlation filters")
    correlation = properties.get("CorrelationFilter", {})
    system = sorted(key for key in correlation if key != "Properties")
    if system:
        raise EmulatorConfigError(
            f"{where}: rule {rule.get('Name')!r}: system-property filters {system} unsupported"
        )
    return {str(key): str(value) for key, value in correlation.get("Properties", {}).items()}


def parse_duration(text: str) -> float:
    """``"PT1M"`` → 60.0."""
    match = _DURATION.match(text)
    if match is None or not any(match.groupdict().values()):
        raise EmulatorConfigError(f"not an ISO 8601 duration: {text!r}")
    parts = {key: int(value or 0) for key, value in match.groupdict().items()}
    return float(
        parts["days"] * 86400 + parts["hours"] * 3600 + parts["minutes"] * 60 + parts["seconds"]
    )
