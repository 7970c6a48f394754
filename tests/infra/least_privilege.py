"""What a principal's requests need, per scope, and what is wrong with the roles it has.

A request of some kind (``shared.meter``: ``blob.get``, ``queue.put`` …) needs one data
action (the Azure Storage and Service Bus authorisation rules) on the scope it targets: a
blob request on its container (or on the account, for the blob service's own requests such
as a user delegation key), any other on the whole account or namespace. A role assignment
covers a need when its role allows the action and its scope contains the target: an
assignment on the account covers every container.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from shared import meter
from tests.infra.grants import ACCOUNT, BuiltInRole, Grant, builtin_roles

STORAGE = "Microsoft.Storage/storageAccounts"
BLOB = f"{STORAGE}/blobServices/containers/blobs"
QUEUE_MESSAGES = f"{STORAGE}/queueServices/queues/messages"
ENTITIES = f"{STORAGE}/tableServices/tables/entities"

#: The data action each kind of request (``shared.meter``) needs.
ACTIONS: Mapping[str, tuple[str, str]] = {
    "blob.get": ("storage", f"{BLOB}/read"),
    "blob.head": ("storage", f"{BLOB}/read"),
    "blob.list": ("storage", f"{BLOB}/read"),
    # Also what creating a container is metered as (a PUT, as Azure bills it); Azure
    # authorises that as containers/write, which Storage Blob Data Contributor has too.
    "blob.put": ("storage", f"{BLOB}/write"),
    "blob.delete": ("storage", f"{BLOB}/delete"),
    # Get User Delegation Key: the key an upload grant's SAS is signed with.
    "blob.delegation-key": (
        "storage",
        "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action",
    ),
    "queue.put": ("storage", f"{QUEUE_MESSAGES}/add/action"),
    "queue.get": ("storage", f"{QUEUE_MESSAGES}/process/action"),
    "queue.delete": ("storage", f"{QUEUE_MESSAGES}/process/action"),
    "queue.update": ("storage", f"{QUEUE_MESSAGES}/write"),
    "queue.peek": ("storage", f"{QUEUE_MESSAGES}/read"),
    "queue.count": ("storage", f"{QUEUE_MESSAGES}/read"),  # Get Queue Metadata
    "queue.clear": ("storage", f"{QUEUE_MESSAGES}/delete"),
    # The meter counts every table write as one kind: insert, update, upsert and delete.
    "table.read": ("storage", f"{ENTITIES}/read"),
    "table.write": ("storage", f"{ENTITIES}/write"),
    "table.write-delete": ("storage", f"{ENTITIES}/delete"),
    "bus.send": ("servicebus", "Microsoft.ServiceBus/namespaces/topics/send/action"),
    "bus.receive": ("servicebus", "Microsoft.ServiceBus/namespaces/topics/receive/action"),
}

#: Requests that go to the batch-events topic, where the Bicep grants roles on that topic
#: only ("servicebus-events"): every send of the controller is its relay publishing an event
#: (its namespace grant lets it receive only), and every receive of the developer is
#: ``billing events tail`` (its namespace grant lets it send only). The meter counts bus
#: requests without their topic, so this is declared here rather than measured.
ON_EVENTS_TOPIC: set[tuple[str, str]] = {("controller", "bus.send"), ("developer", "bus.receive")}

#: A request: its kind and the container it targets (:data:`ACCOUNT` for any but a blob
#: request to a container).
Request = tuple[str, str]


@dataclass(frozen=True, order=True)
class Need:
    service: str
    scope: str
    action: str

    def __str__(self) -> str:
        place = "the account" if self.scope == ACCOUNT else f"container {self.scope}"
        return f"{self.action} on {place}"


def needs_of(requests: Iterable[Request], principal: str = "") -> set[Need]:
    """What the requests a principal made need (one made for a caller,
    ``queue.count@dashboard``, needs what the request itself needs)."""
    needs = set()
    for kind, scope in requests:
        kind = meter.request_kind(kind)
        assert kind in ACTIONS, f"a request of a kind no data action is known for: {kind}"
        service, action = ACTIONS[kind]
        if (principal, kind) in ON_EVENTS_TOPIC:
            service = "servicebus-events"
        needs.add(Need(service, scope, action))
        if kind == "table.write":
            needs.add(Need(service, scope, ACTIONS["table.write-delete"][1]))
    return needs


def covers(grant: Grant, need: Need) -> bool:
    return (
        grant.service == need.service
        and grant.scope in (ACCOUNT, need.scope)
        and grant.role.allows(need.action)
    )


def all_covered(needs: Iterable[Need], grants: list[Grant]) -> bool:
    return all(any(covers(g, need) for g in grants) for need in needs)


def least_privilege_problems(principal: str, needs: set[Need], grants: list[Grant]) -> list[str]:
    """Needs no grant covers, and grants that could go or be narrower: in role (a built-in
    role that allows less) or in scope (an account grant whose needs are all in containers).
    """
    problems = [
        f"{principal}: {need} is used but not granted"
        for need in sorted(needs)
        if not any(covers(g, need) for g in grants)
    ]
    for grant in grants:
        others = [g for g in grants if g is not grant]
        served = {need for need in needs if covers(grant, need)}
        if not served:
            problems.append(f"{principal}: {grant} is granted but never used")
        elif all_covered(served, others):
            problems.append(f"{principal}: {grant} adds nothing the others lack")
        else:
            problems.extend(_narrower(principal, grant, others, served))
    return problems


def _narrower(principal: str, grant: Grant, others: list[Grant], served: set[Need]) -> list[str]:
    narrower_roles = [r for r in builtin_roles().values() if r.narrower_than(grant.role)]
    found = [
        f"{principal}: {grant} could be {narrower.name}"
        for narrower in narrower_roles
        if all_covered(served, [*others, replace(grant, role=narrower)])
    ]
    containers = sorted({need.scope for need in served} - {ACCOUNT})
    if grant.scope != ACCOUNT or not containers:
        return found
    # The same role on only the containers used, and for what it served on the account
    # itself (a user delegation key), nothing or the narrowest role that does there.
    scoped = [*others, *(replace(grant, scope=c) for c in containers)]
    if all_covered(served, scoped):
        return [*found, f"{principal}: {grant} could be on {', '.join(containers)} only"]
    enough = [
        role for role in narrower_roles if all_covered(served, [*scoped, replace(grant, role=role)])
    ]
    narrowest = [r for r in enough if not any(o.narrower_than(r) for o in enough)]
    found.extend(
        f"{principal}: {grant} could be on {', '.join(containers)} only, "
        f"with {role.name} on the account"
        for role in narrowest
    )
    return found


def role_named(name: str) -> BuiltInRole:
    return next(role for role in builtin_roles().values() if role.name == name)
