"""The names Bicep declares are the names the code uses, both ways.

Queues, containers and tables (``shared.provision``), the containers blob roles are on,
the trigger topic, and the Service Bus subscriptions with their rules (what processors and
the controller open when they may not manage entities), evaluated from the templates with
their parameter defaults and the code's default settings.
"""

from __future__ import annotations

from typing import Any

from billing.cli.events import TAIL_SUBSCRIPTION
from controller.worker import CONTROLLER_SUBSCRIPTION
from processor.subscriptions import subscription_specs
from shared.domain.priority import PRIORITIES
from shared.provision import containers_for, queues_for, tables_for
from shared.settings import Settings
from tests.infra.bicep import INFRA_DIR, BicepFile, Evaluator, is_identifier, unwrap
from tests.infra.grants import ACCOUNT, declared_grants

SETTINGS = Settings(_env_file=None)  # type: ignore[call-arg]


def instances(file: BicepFile, resource_type: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Each deployed instance of the file's resources of ``resource_type``: its evaluated
    name and properties, and (for a child declared with ``parent:``) its parent's name."""
    # The account or namespace name, location and tags do not matter here.
    evaluator = Evaluator(file, {"name": "-", "location": "-", "tags": {}, **params})
    names: dict[str, list[str]] = {}
    found = []
    for symbol, resource in file.resources.items():
        body, loop = unwrap(resource["config"])
        turns = list(evaluator.loop_items(loop, {})) if loop else [{}]
        names[symbol] = [str(evaluator.value(body["name"], turn)) for turn in turns]
        if resource["type"].lower() != resource_type.lower():
            continue
        for turn, name in zip(turns, names[symbol], strict=True):
            parent = body.get("parent")
            if is_identifier(parent):
                parent_name = names[str(parent)][0]
            elif isinstance(parent, dict):  # parent: things[i]
                operands = parent["operator"]["operands"]
                parent_name = names[str(operands["operand_1"])][turn[operands["operand_2"]]]
            else:
                parent_name = None
            properties = evaluator.value(body.get("properties", {}), turn)
            found.append({"name": name, "parent": parent_name, "properties": properties})
    return found


def storage_names(kind: str) -> set[str]:
    file = BicepFile.parse(INFRA_DIR / "modules" / "storage.bicep")
    resource = f"Microsoft.Storage/storageAccounts/{kind}"
    return {i["name"] for i in instances(file, resource, {"partitions": SETTINGS.partitions})}


def test_main_bicep_partitions_default_to_the_settings_default() -> None:
    main = BicepFile.parse(INFRA_DIR / "main.bicep")
    assert main.parameters["partitions"]["default"] == SETTINGS.partitions


def test_queues_are_those_the_code_uses() -> None:
    declared = storage_names("queueServices/queues")
    assert declared == set(queues_for(SETTINGS))


def test_containers_and_tables_are_those_the_code_uses() -> None:
    assert storage_names("blobServices/containers") == set(containers_for(SETTINGS))
    assert storage_names("tableServices/tables") == set(tables_for(SETTINGS))


def test_blob_roles_are_on_containers_storage_bicep_declares() -> None:
    scopes = {
        grant.scope
        for principal_grants in declared_grants().values()
        for grant in principal_grants
        if grant.service == "storage" and grant.scope != ACCOUNT
    }
    assert scopes, "no blob role on a container"
    assert scopes <= storage_names("blobServices/containers")


def test_the_apps_scale_on_the_queues_the_code_reads() -> None:
    main = BicepFile.parse(INFRA_DIR / "main.bicep")
    evaluator = Evaluator(main)
    scaled = {
        symbol: evaluator.value(unwrap(main.modules[symbol]["config"])[0]["params"]["scaleQueues"])
        for symbol in ("processor", "controller")
    }
    assert scaled["processor"] == SETTINGS.all_work_queues()
    assert scaled["controller"] == [SETTINGS.output_queue]


def servicebus() -> BicepFile:
    return BicepFile.parse(INFRA_DIR / "modules" / "servicebus.bicep")


def test_the_topics_are_the_trigger_and_the_events_topic() -> None:
    topics = instances(servicebus(), "Microsoft.ServiceBus/namespaces/topics", {})
    assert [t["name"] for t in topics] == [SETTINGS.trigger_topic, SETTINGS.events_topic]


def subscriptions_of(file: BicepFile, topic: str) -> list[dict[str, Any]]:
    found = instances(file, "Microsoft.ServiceBus/namespaces/topics/subscriptions", {})
    return [s for s in found if s["parent"] == topic]


def test_the_events_topic_has_the_subscription_billing_events_tail_reads() -> None:
    file = servicebus()
    [tail] = subscriptions_of(file, SETTINGS.events_topic)
    assert tail["name"] == TAIL_SUBSCRIPTION
    rules = instances(file, "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules", {})
    assert not [r for r in rules if r["parent"] == TAIL_SUBSCRIPTION]  # $Default: every event


def test_subscriptions_and_their_rules_are_what_the_roles_open() -> None:
    file = servicebus()
    subscriptions = subscriptions_of(file, SETTINGS.trigger_topic)
    rules = instances(file, "Microsoft.ServiceBus/namespaces/topics/subscriptions/rules", {})
    declared: dict[str, list[dict[str, str]]] = {s["name"]: [] for s in subscriptions}
    for rule in rules:
        assert rule["properties"]["filterType"] == "CorrelationFilter", rule
        declared[rule["parent"]].append(rule["properties"]["correlationFilter"]["properties"])
    # Every subscription's default rule (which would take every message) is replaced.
    for subscription in declared:
        assert any(r["parent"] == subscription and r["name"] == "$Default" for r in rules), (
            subscription
        )

    expected = {
        spec.name: [dict(f) for f in spec.rules]
        for spec in [
            *subscription_specs("any-instance", PRIORITIES, per_instance=False),
            CONTROLLER_SUBSCRIPTION,
        ]
    }
    assert set(declared) == set(expected)
    for name, filters in expected.items():
        assert sorted(map(str, declared[name])) == sorted(map(str, filters)), name


def test_a_name_missing_from_bicep_or_from_the_code_fails() -> None:
    path = INFRA_DIR / "modules" / "storage.bicep"
    source = path.read_text(encoding="utf-8")
    old = "[ 'payloads', 'results', 'control', 'incoming' ]"
    assert old in source
    fewer = BicepFile.parse(path, source.replace(old, "[ 'payloads', 'results', 'control' ]"))
    more = BicepFile.parse(
        path, source.replace(old, "[ 'payloads', 'results', 'control', 'incoming', 'x' ]")
    )
    resource = "Microsoft.Storage/storageAccounts/blobServices/containers"
    for file in (fewer, more):
        declared = {i["name"] for i in instances(file, resource, {"partitions": 4})}
        assert declared != set(containers_for(SETTINGS))
