"""Bicep files as ``pycep-parser`` reads them, with what the checks need on top.

pycep turns a file into plain data: a quoted string becomes ``str``, an identifier (a
parameter, variable, resource or loop variable) a ``BicepElement`` (a ``str`` subclass),
and an expression a dict such as ``{"function": {...}}`` or ``{"operator": {...}}``.
:class:`BicepFile` keeps the source lines so that a problem can name its line, and
:class:`Evaluator` computes the values the name checks need (loops over ``range``, string
interpolation, variables, parameter defaults) without a compiler.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pycep import BicepParser
from pycep.models import BicepElement

INFRA_DIR = Path(__file__).parents[2] / "infra"

_PARSER = BicepParser(add_line_numbers=True)
_INTERPOLATION = re.compile(r"\$\{([^}]*)\}")


def bicep_files(folder: Path = INFRA_DIR) -> list[Path]:
    return sorted(folder.rglob("*.bicep"))


def is_identifier(value: object) -> bool:
    return isinstance(value, BicepElement)


def is_literal_string(value: object) -> bool:
    return isinstance(value, str) and not isinstance(value, BicepElement)


def is_interpolated(value: str) -> bool:
    return "${" in value


def loop_parts(value: object) -> tuple[dict[str, Any], Any] | None:
    """``(loop_type, body)`` of a ``[for …: body]`` value, else None."""
    if isinstance(value, dict) and "loop_type" in value and "config" in value:
        return value["loop_type"], value["config"]
    return None


def is_expression(value: object) -> bool:
    """Whether ``value`` is computed (not an object, array or scalar literal)."""
    if is_identifier(value):
        return True
    if not isinstance(value, dict):
        return False
    if loop_parts(value) is not None or set(value) == {"condition", "config"}:
        return True
    if value.get("type") == "lambda_expression":
        return True
    return len(value) == 1 and next(iter(value)) in ("function", "operator")


def unwrap(config: Any) -> tuple[Any, dict[str, Any] | None]:
    """The body of a resource or module declaration, and its loop (if any).

    pycep wraps ``[for …: {…}]`` as ``{"loop_type", "condition", "config"}`` and
    ``if (…) {…}`` as ``{"condition", "config"}``.
    """
    loop = None
    while (
        isinstance(config, dict)
        and "config" in config
        and ("loop_type" in config or set(config) == {"condition", "config"})
    ):
        loop = config.get("loop_type", loop)
        config = config["config"]
    return config, loop


def key_name(key: str) -> str:
    """pycep keeps the quotes of a quoted key (``'azd-service-name'``)."""
    return key[1:-1] if len(key) >= 2 and key[0] == key[-1] == "'" else key


@dataclass
class BicepFile:
    path: Path
    doc: dict[str, Any]
    lines: list[str] = field(repr=False)

    @classmethod
    def parse(cls, path: Path, text: str | None = None) -> BicepFile:
        source = path.read_text(encoding="utf-8") if text is None else text
        try:
            doc = _PARSER.parse(text=source)
        except Exception as error:  # lark's errors name the line and column, not the file
            raise ValueError(f"{path}: pycep cannot parse it: {error}") from error
        return cls(path=path, doc=doc, lines=source.splitlines())

    @property
    def scope(self) -> str:
        return str(self.doc["globals"]["scope"]["value"])

    def section(self, name: str) -> dict[str, dict[str, Any]]:
        return dict(self.doc.get(name, {}))

    @cached_property
    def parameters(self) -> dict[str, dict[str, Any]]:
        return self.section("parameters")

    @cached_property
    def variables(self) -> dict[str, dict[str, Any]]:
        return self.section("variables")

    @cached_property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.section("resources")

    @cached_property
    def modules(self) -> dict[str, dict[str, Any]]:
        return self.section("modules")

    @cached_property
    def outputs(self) -> dict[str, dict[str, Any]]:
        return self.section("outputs")

    def line_of(self, start: int, end: int, keys: list[str | int]) -> int:
        """The line of the last of ``keys`` found in order between ``start`` and ``end``.

        An int in ``keys`` is an array index: the next key is looked for in that element
        (its n-th occurrence), a good guess for arrays of objects written one by one.
        """
        line, skip = start, 0
        for key in keys:
            if isinstance(key, int):
                skip = key
                continue
            pattern = re.compile(rf"(^|[\s{{,])'?{re.escape(key)}'?\s*:")
            for number in range(line, min(end, len(self.lines)) + 1):
                if pattern.search(self.lines[number - 1]):
                    line = number
                    if skip == 0:
                        break
                    skip -= 1
            skip = 0
        return line

    def relative(self) -> str:
        try:
            return str(self.path.relative_to(INFRA_DIR.parent))
        except ValueError:
            return str(self.path)


class CannotEvaluateError(ValueError):
    """The value depends on something only a deployment knows (an output, a function)."""


class Evaluator:
    """Computes the literal values of a file's expressions, as far as they are knowable.

    Parameters take the values given, else their defaults. Enough of Bicep for names:
    literals, interpolation, variables, ``[for …]``, ``range``, ``map``, ``flatten``,
    ``concat``, ``string``, ``toLower``, property and index access, the ternary.
    """

    def __init__(self, file: BicepFile, params: Mapping[str, Any] | None = None) -> None:
        self._file = file
        self._params = dict(params or {})

    def value(self, expression: Any, scope: Mapping[str, Any] | None = None) -> Any:
        scope = scope or {}
        if isinstance(expression, BicepElement):
            return self._name(str(expression), scope)
        if isinstance(expression, str):
            return _INTERPOLATION.sub(
                lambda m: str(self._inner(m.group(1).strip(), scope)), expression
            )
        if isinstance(expression, list):
            return [self.value(item, scope) for item in expression]
        if isinstance(expression, dict):
            return self._dict(expression, scope)
        return expression

    def loop_items(
        self, loop: dict[str, Any], scope: Mapping[str, Any]
    ) -> Iterator[dict[str, Any]]:
        """The scopes of each turn of a ``for`` loop (item and index variables bound)."""
        detail = loop["detail"]
        items = self.value(detail["array_name"], scope)
        if not isinstance(items, list):
            raise CannotEvaluateError(f"loop over {items!r}")
        for index, item in enumerate(items):
            turn = dict(scope)
            turn[detail["item_name"]] = item
            if "index_name" in detail:
                turn[detail["index_name"]] = index
            yield turn

    def _name(self, name: str, scope: Mapping[str, Any]) -> Any:
        if name in scope:
            return scope[name]
        if name in self._file.variables:
            return self.value(self._file.variables[name]["value"])
        if name in self._params:
            return self._params[name]
        parameter = self._file.parameters.get(name)
        if parameter is not None and parameter.get("default") is not None:
            return self.value(parameter["default"])
        raise CannotEvaluateError(name)

    def _inner(self, text: str, scope: Mapping[str, Any]) -> Any:
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            return self._name(text, scope)
        parsed = _PARSER.parse(text=f"var inner = {text}\n")
        return self.value(parsed["variables"]["inner"]["value"], scope)

    def _dict(self, expression: dict[str, Any], scope: Mapping[str, Any]) -> Any:
        loop = loop_parts(expression)
        if loop is not None:
            return [self.value(loop[1], turn) for turn in self.loop_items(loop[0], scope)]
        if "function" in expression and len(expression) == 1:
            return self._function(expression["function"], scope)
        if "operator" in expression and len(expression) == 1:
            return self._operator(expression["operator"], scope)
        if expression.get("type") == "lambda_expression":
            return expression
        return {key_name(k): self.value(v, scope) for k, v in expression.items()}

    def _function(self, call: dict[str, Any], scope: Mapping[str, Any]) -> Any:
        kind = call["type"]
        args = [v for v in call.get("parameters", {}).values() if v is not None]
        if kind == "range":
            start, count = (self.value(a, scope) for a in args)
            return list(range(start, start + count))
        if kind == "map":
            items = self.value(args[0], scope)
            detail = args[1]["detail"]
            return [self.value(detail["expression"], {**scope, detail["var_1"]: i}) for i in items]
        if kind == "flatten":
            return [item for part in self.value(args[0], scope) for item in part]
        if kind == "concat":
            values = [self.value(a, scope) for a in args]
            if all(isinstance(v, list) for v in values):
                return [item for v in values for item in v]
            return "".join(str(v) for v in values)
        if kind == "string":
            return str(self.value(args[0], scope))
        if kind == "to_lower":
            return str(self.value(args[0], scope)).lower()
        raise CannotEvaluateError(f"function {kind}")

    def _operator(self, operator: dict[str, Any], scope: Mapping[str, Any]) -> Any:
        kind = operator["type"]
        operands = operator["operands"]
        if kind == "conditional":
            chosen = self.value(operands["condition"], scope)
            return self.value(operands["true_value" if chosen else "false_value"], scope)
        if kind == "index_accessor":
            return self.value(operands["operand_1"], scope)[
                self.value(operands["operand_2"], scope)
            ]
        if kind == "property_accessor":
            # pycep nests ``a.b.c`` to the right: (a).(b.c)
            base = self.value(operands["operand_1"], scope)
            member = operands["operand_2"]
            while _is_operator(member, "property_accessor"):
                inner = member["operator"]["operands"]
                base = self._member(base, inner["operand_1"], scope)
                member = inner["operand_2"]
            return self._member(base, member, scope)
        raise CannotEvaluateError(f"operator {kind}")

    def _member(self, base: Any, member: Any, scope: Mapping[str, Any]) -> Any:
        if _is_operator(member, "index_accessor"):  # a.b[i]
            inner = member["operator"]["operands"]
            return self._member(base, inner["operand_1"], scope)[
                self.value(inner["operand_2"], scope)
            ]
        if isinstance(base, dict) and isinstance(member, str) and str(member) in base:
            return base[str(member)]
        raise CannotEvaluateError(f"member {member!r} of {type(base).__name__}")


def _is_operator(value: Any, kind: str) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("operator"), dict)
        and value["operator"].get("type") == kind
    )
