"""The data-plane role assignments ``infra/main.bicep`` declares, and what they allow.

``main.bicep`` grants through two modules, ``storage-access.bicep`` and
``servicebus-access.bicep``, called once per app identity (a loop over the roles) and once
for the developer; each assigns the built-in roles of its ``roleDefinitionIds`` to its
``principalId`` on the account or namespace. :func:`declared_grants` evaluates those calls.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.infra.azure_types import TYPES_DIR
from tests.infra.bicep import INFRA_DIR, BicepFile, Evaluator, unwrap

ACCESS_MODULES = {
    "modules/storage-access.bicep": "storage",
    "modules/servicebus-access.bicep": "servicebus",
    # roles on the batch-events topic only, named ``servicebus-events-access-<principal>``
    "modules/servicebus-topic-access.bicep": "servicebus-events",
}


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


@cache
def builtin_roles() -> dict[str, BuiltInRole]:
    table = json.loads((TYPES_DIR / "builtin-roles.json").read_text(encoding="utf-8"))
    return {
        r["id"]: BuiltInRole(
            r["id"], r["name"], tuple(r["dataActions"]), tuple(r.get("actions", ()))
        )
        for r in table["roles"]
    }


def declared_grants(main: BicepFile | None = None) -> dict[str, dict[str, list[str]]]:
    """principal (``initiator``… or ``developer``) → service → built-in role ids."""
    main = main or BicepFile.parse(INFRA_DIR / "main.bicep")
    evaluator = Evaluator(main)
    grants: dict[str, dict[str, list[str]]] = {}
    for module in main.modules.values():
        path = str(module["detail"]["path"])
        service = ACCESS_MODULES.get(path)
        if service is None:
            continue
        body, loop = unwrap(module["config"])
        turns = list(evaluator.loop_items(loop, {})) if loop else [{}]
        for turn in turns:
            name = str(evaluator.value(body["name"], turn))
            principal = name.removeprefix(f"{service}-access-")
            roles = evaluator.value(body["params"]["roleDefinitionIds"], turn)
            grants.setdefault(principal, {}).setdefault(service, []).extend(roles)
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
