"""The data-plane role assignments ``infra/main.bicep`` declares, and what they allow.

``main.bicep`` grants through access modules, called once per app identity (a loop over
the roles) and once for the developer: ``storage-access.bicep`` and
``servicebus-access.bicep`` on the whole account or namespace,
``storage-container-access.bicep`` on one blob container (once per principal and
container), ``servicebus-topic-access.bicep`` on the batch-events topic. Each assigns the
built-in roles of its ``roleDefinitionIds`` to its ``principalId``.
:func:`declared_grants` evaluates those calls.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from shared import meter
from tests.infra.azure_types import TYPES_DIR
from tests.infra.bicep import INFRA_DIR, BicepFile, Evaluator, unwrap

#: Module → the service it grants on; each call is named ``<service>-access-<principal>``.
ACCESS_MODULES = {
    "modules/storage-access.bicep": "storage",
    "modules/servicebus-access.bicep": "servicebus",
    # roles on the batch-events topic only
    "modules/servicebus-topic-access.bicep": "servicebus-events",
}
#: Module → the service it grants on, on the container of its ``containerName``; each call
#: is named ``<service>-container-access-<principal>-<container>``.
CONTAINER_ACCESS_MODULES = {"modules/storage-container-access.bicep": "storage"}

#: The scope of a grant on the whole account (or namespace, or the events topic), rather
#: than on one blob container: the meter's name for a request's, so that the two compare.
ACCOUNT = meter.ACCOUNT


@dataclass(frozen=True)
class BuiltInRole:
    id: str
    name: str
    data_actions: tuple[str, ...]
    #: The control-plane actions a data client needs (a user delegation key); most: none.
    actions: tuple[str, ...] = ()

    def allows(self, action: str) -> bool:
        patterns = (*self.data_actions, *self.actions)
        return any(fnmatch.fnmatchcase(action, pattern) for pattern in patterns)

    def narrower_than(self, other: BuiltInRole) -> bool:
        """Whether everything this role allows, ``other`` allows, and not the reverse."""

        def covers(wide: BuiltInRole, narrow: BuiltInRole) -> bool:
            return all(wide.allows(action) for action in (*narrow.data_actions, *narrow.actions))

        granted = self.data_actions or self.actions
        return bool(granted) and covers(other, self) and not covers(self, other)


@dataclass(frozen=True)
class Grant:
    """One built-in role, on one service, on the whole of it or on one blob container."""

    service: str
    scope: str
    role: BuiltInRole

    def __str__(self) -> str:
        if self.service != "storage":
            return self.role.name
        place = "the account" if self.scope == ACCOUNT else f"container {self.scope}"
        return f"{self.role.name} on {place}"


@cache
def builtin_roles() -> dict[str, BuiltInRole]:
    table = json.loads((TYPES_DIR / "builtin-roles.json").read_text(encoding="utf-8"))
    return {
        r["id"]: BuiltInRole(
            r["id"], r["name"], tuple(r["dataActions"]), tuple(r.get("actions", ()))
        )
        for r in table["roles"]
    }


def declared_grants(main: BicepFile | None = None) -> dict[str, list[Grant]]:
    """principal (``initiator``… or ``developer``) → its grants."""
    main = main or BicepFile.parse(INFRA_DIR / "main.bicep")
    evaluator = Evaluator(main)
    known = builtin_roles()
    grants: dict[str, list[Grant]] = {}
    for module in main.modules.values():
        path = str(module["detail"]["path"])
        service = ACCESS_MODULES.get(path) or CONTAINER_ACCESS_MODULES.get(path)
        if service is None:
            continue
        body, loop = unwrap(module["config"])
        turns = list(evaluator.loop_items(loop, {})) if loop else [{}]
        for turn in turns:
            name = str(evaluator.value(body["name"], turn))
            params = body["params"]
            if path in CONTAINER_ACCESS_MODULES:
                scope = str(evaluator.value(params["containerName"], turn))
                principal = name.removeprefix(f"{service}-container-access-")
                principal = principal.removesuffix(f"-{scope}")
            else:
                scope, principal = ACCOUNT, name.removeprefix(f"{service}-access-")
            roles = evaluator.value(params["roleDefinitionIds"], turn)
            grants.setdefault(principal, []).extend(
                Grant(service, scope, known[role_id]) for role_id in roles
            )
    return grants


def role_ids_in(files: Iterable[BicepFile]) -> list[tuple[BicepFile, str, Any]]:
    """Every role definition id a role assignment names: (file, resource, id expression)."""
    found = []
    for file in files:
        for symbol, resource in file.resources.items():
            if resource["type"].lower() != "microsoft.authorization/roleassignments":
                continue
            body, _ = unwrap(resource["config"])
            found.append((file, symbol, body["properties"]["roleDefinitionId"]))
    return found


def access_module(path: str) -> BicepFile:
    return BicepFile.parse(Path(INFRA_DIR, path))
