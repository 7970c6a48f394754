"""The Azure resource type definitions the Bicep compiler uses, read from ``types/``.

Each ``types/<namespace>/<api version>/types.json`` is one array of type nodes in the
format of the ``Azure/bicep-types-az`` repository (provenance: ``types/README.md``); a
``{"$ref": "#/N"}`` points at element N of the same array. :class:`TypeLibrary` finds the
body type of ``<resource type>@<api version>`` and resolves references within its file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

TYPES_DIR = Path(__file__).parent / "types"

# Property flags of an ObjectType's property (bicep-types).
REQUIRED = 1
READ_ONLY = 2


@dataclass(frozen=True)
class TypeNode:
    """One type of one ``types.json`` file, able to resolve the references it holds."""

    nodes: tuple[dict[str, Any], ...]
    index: int

    @property
    def raw(self) -> dict[str, Any]:
        return self.nodes[self.index]

    @property
    def kind(self) -> str:
        return str(self.raw["$type"])

    def follow(self, reference: dict[str, str]) -> TypeNode:
        return TypeNode(self.nodes, int(reference["$ref"].removeprefix("#/")))

    def describe(self) -> str:
        raw = self.raw
        if self.kind == "StringLiteralType":
            return repr(raw["value"])
        return str(raw.get("name") or self.kind)


@cache
def _load(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(path.read_text(encoding="utf-8")))


class TypeLibrary:
    """Resource body types by ``Microsoft.X/y`` and API version."""

    def __init__(self, folder: Path = TYPES_DIR) -> None:
        self._folder = folder

    def body(self, resource_type: str, api_version: str) -> TypeNode | None:
        """The body type of ``resource_type@api_version``, or None when not published here."""
        namespace = resource_type.split("/", 1)[0].lower()
        path = self._folder / namespace / api_version / "types.json"
        if not path.is_file():
            return None
        nodes = _load(path)
        wanted = f"{resource_type}@{api_version}".lower()
        for index, node in enumerate(nodes):
            if node["$type"] == "ResourceType" and node["name"].lower() == wanted:
                return TypeNode(nodes, index).follow(node["body"])
        return None
