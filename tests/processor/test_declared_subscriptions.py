"""The shared subscriptions the emulator's config declares are the ones processors open.

Without Manage rights a processor only opens ``processors-<priority>`` and trusts that its
rules are those of :func:`~processor.subscriptions.subscription_specs`; a rule missing
from the declaration would go unnoticed until a broadcast (the gate's) never arrived.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from processor.subscriptions import subscription_specs
from shared.domain.priority import PRIORITIES
from shared.settings import Settings

EMULATOR_CONFIG = Path(__file__).parents[2] / "infra" / "servicebus-emulator" / "config.json"


def declared_rules() -> dict[str, list[dict[str, str]]]:
    config: dict[str, Any] = json.loads(EMULATOR_CONFIG.read_text())
    (namespace,) = config["UserConfig"]["Namespaces"]
    (topic,) = [t for t in namespace["Topics"] if t["Name"] == Settings().trigger_topic]
    return {
        subscription["Name"]: [
            rule["Properties"]["CorrelationFilter"]["Properties"]
            for rule in subscription.get("Rules", [])
        ]
        for subscription in topic["Subscriptions"]
    }


def test_the_emulator_declares_every_shared_subscription_with_the_rules_processors_expect() -> None:
    declared = declared_rules()
    for spec in subscription_specs("any-instance", PRIORITIES, per_instance=False):
        assert sorted(map(str, declared[spec.name])) == sorted(map(str, spec.rules)), spec.name
