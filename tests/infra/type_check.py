"""Checks every resource body of a Bicep file against its published type definition.

What ``bicep build`` would reject, found without a compiler: a resource type or API version
without a definition, an unknown property, a missing required one, a read-only one set, a
string literal outside the allowed values (also of an "extensible" enum, stricter than
the compiler), outside its length or pattern, an integer outside
its range, a literal of the wrong kind. Values that only a deployment knows (parameters,
outputs, functions) are taken on trust; a variable is checked where it is used, and the
body of a ``[for …]`` against the array's item type.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.infra.azure_types import READ_ONLY, REQUIRED, TypeLibrary, TypeNode
from tests.infra.bicep import (
    BicepFile,
    is_expression,
    is_identifier,
    is_interpolated,
    key_name,
    loop_parts,
    unwrap,
)

#: Keys of a resource declaration that are Bicep's, not the resource body's.
BICEP_KEYS = frozenset({"parent", "scope", "dependsOn"})


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path}: {self.message}"


@dataclass(frozen=True)
class _Origin:
    """Where a value is written: the lines to search for its keys, and the keys so far."""

    start: int
    end: int
    keys: tuple[str | int, ...]

    def at(self, key: str | int) -> _Origin:
        return _Origin(self.start, self.end, (*self.keys, key))


class TypeChecker:
    def __init__(self, library: TypeLibrary | None = None) -> None:
        self._library = library or TypeLibrary()

    def check(self, file: BicepFile) -> list[Problem]:
        problems: list[Problem] = []
        for symbol, resource in file.resources.items():
            problems.extend(self._resource(file, symbol, resource))
        return problems

    def _resource(self, file: BicepFile, symbol: str, resource: dict[str, Any]) -> list[Problem]:
        type_name, api = resource["type"], resource["api_version"]
        origin = _Origin(resource["__start_line__"], resource["__end_line__"], ())
        body_type = self._library.body(type_name, api)
        if body_type is None:
            return [
                Problem(
                    file.relative(),
                    origin.start,
                    symbol,
                    f"no type definition for {type_name}@{api}",
                )
            ]
        if resource["existing"]:
            return []
        body, _ = unwrap(resource["config"])
        walk = _Walk(file, symbol)
        walk.object_body(body, body_type, origin, path=symbol, skip=BICEP_KEYS)
        return walk.problems


class _Walk:
    def __init__(self, file: BicepFile, symbol: str) -> None:
        self.file = file
        self.symbol = symbol
        self.problems: list[Problem] = []

    def report(self, origin: _Origin, path: str, message: str) -> None:
        line = self.file.line_of(origin.start, origin.end, list(origin.keys))
        self.problems.append(Problem(self.file.relative(), line, path, message))

    # --- values -------------------------------------------------------------------------
    def value(self, value: Any, expected: TypeNode, origin: _Origin, path: str) -> None:
        kind = expected.kind
        if kind == "AnyType":
            return
        if is_identifier(value) and str(value) in self.file.variables:
            variable = self.file.variables[str(value)]
            inner = _Origin(variable["__start_line__"], variable["__end_line__"], ())
            self.value(variable["value"], expected, inner, f"{path} (var {value})")
            return
        loop = loop_parts(value)
        if loop is not None:
            if kind == "ArrayType":
                item = expected.follow(expected.raw["itemType"])
                self.value(loop[1], item, origin, f"{path}[]")
            return
        if isinstance(value, dict) and value.get("operator", {}).get("type") == "conditional":
            operands = value["operator"]["operands"]
            self.value(operands["true_value"], expected, origin, path)
            self.value(operands["false_value"], expected, origin, path)
            return
        if value is None or is_expression(value):
            return
        if kind == "UnionType":
            self.union(value, expected, origin, path)
        elif kind in ("ObjectType", "DiscriminatedObjectType"):
            if isinstance(value, dict):
                self.object_body(value, expected, origin, path)
            else:
                self.report(
                    origin, path, f"expected an object ({expected.describe()}), got {value!r}"
                )
        elif kind == "ArrayType":
            if isinstance(value, list):
                item = expected.follow(expected.raw["itemType"])
                for index, element in enumerate(value):
                    self.value(element, item, origin.at(index), f"{path}[{index}]")
            else:
                self.report(origin, path, f"expected an array, got {value!r}")
        else:
            self.scalar(value, expected, origin, path)

    def scalar(self, value: Any, expected: TypeNode, origin: _Origin, path: str) -> None:
        kind, raw = expected.kind, expected.raw
        if kind == "StringType":
            if not isinstance(value, str):
                self.report(origin, path, f"expected a string, got {value!r}")
            elif not is_interpolated(value):
                self.string_limits(value, raw, origin, path)
        elif kind == "StringLiteralType":
            if isinstance(value, str) and is_interpolated(value):
                return
            if value != raw["value"]:
                self.report(origin, path, f"{value!r} is not allowed: only {raw['value']!r}")
        elif kind == "IntegerType":
            if isinstance(value, bool) or not isinstance(value, int):
                self.report(origin, path, f"expected an integer, got {value!r}")
            elif not raw.get("minValue", value) <= value <= raw.get("maxValue", value):
                limits = f"{raw.get('minValue', '')}..{raw.get('maxValue', '')}"
                self.report(origin, path, f"{value} is outside {limits}")
        elif kind == "BooleanType" and not isinstance(value, bool):
            self.report(origin, path, f"expected true or false, got {value!r}")

    def string_limits(self, value: str, raw: dict[str, Any], origin: _Origin, path: str) -> None:
        if len(value) < raw.get("minLength", 0) or len(value) > raw.get("maxLength", len(value)):
            limits = f"{raw.get('minLength', 0)}..{raw.get('maxLength', '')}"
            self.report(origin, path, f"{value!r} has {len(value)} characters, not {limits}")
        pattern = raw.get("pattern")
        if pattern:
            try:
                compiled = re.compile(pattern)
            except re.error:
                return  # a .NET-only pattern: nothing to say
            if not compiled.search(value):
                self.report(origin, path, f"{value!r} does not match {pattern}")

    def union(self, value: Any, expected: TypeNode, origin: _Origin, path: str) -> None:
        members = [expected.follow(ref) for ref in expected.raw["elements"]]
        literals = [m.raw["value"] for m in members if m.kind == "StringLiteralType"]
        strings = [m for m in members if m.kind == "StringType"]
        if isinstance(value, str) and literals and len(literals) + len(strings) == len(members):
            # Most Azure enums are "extensible" (the literals and any string): the compiler
            # takes any string there, the resource provider does not. A literal outside the
            # published values is a typo far more often than a value newer than the spec.
            if not is_interpolated(value) and value not in literals:
                allowed = ", ".join(repr(v) for v in literals)
                self.report(origin, path, f"{value!r} is not one of {allowed}")
            return
        for member in members:
            trial = _Walk(self.file, self.symbol)
            trial.value(value, member, origin, path)
            if not trial.problems:
                return
        options = ", ".join(m.describe() for m in members)
        self.report(origin, path, f"{value!r} matches none of {options}")

    # --- objects ------------------------------------------------------------------------
    def object_body(
        self,
        body: Any,
        expected: TypeNode,
        origin: _Origin,
        path: str,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        if not isinstance(body, dict) or is_expression(body):
            return
        given = {key_name(k): v for k, v in body.items()}
        properties, additional = self.properties_of(expected, given)
        for name, value in given.items():
            if name in skip:
                continue
            at = origin.at(name)
            where = f"{path}.{name}"
            declared = properties.get(name)
            if declared is None:
                if additional is not None:
                    self.value(value, additional, at, where)
                else:
                    known = ", ".join(sorted(properties))
                    self.report(at, where, f"unknown property (known: {known})")
                continue
            if declared["flags"] & READ_ONLY:
                self.report(at, where, "read-only property is set")
                continue
            self.value(value, expected.follow(declared["type"]), at, where)
        for name, declared in properties.items():
            if declared["flags"] & REQUIRED and name not in given:
                self.report(origin, f"{path}.{name}", "required property is missing")

    def properties_of(
        self, expected: TypeNode, given: dict[str, Any]
    ) -> tuple[dict[str, dict[str, Any]], TypeNode | None]:
        """The properties an object may have (a discriminated one's per its discriminator)."""
        raw = expected.raw
        if expected.kind == "ObjectType":
            extra = raw.get("additionalProperties")
            return dict(raw.get("properties", {})), expected.follow(extra) if extra else None
        properties = dict(raw.get("baseProperties", {}))
        tag = given.get(raw["discriminator"])
        elements: dict[str, dict[str, str]] = raw["elements"]
        known = isinstance(tag, str) and tag in elements
        chosen = [elements[str(tag)]] if known else list(elements.values())
        for reference in chosen:
            element = expected.follow(reference)
            properties.update(element.raw.get("properties", {}))
        return properties, None


def check_files(files: list[BicepFile], library: TypeLibrary | None = None) -> Iterator[Problem]:
    checker = TypeChecker(library)
    for file in files:
        yield from checker.check(file)
