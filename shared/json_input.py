"""Reading JSON documents from users: strict parsing and problems named by JSON path.

An upload that is rejected should say *every* thing wrong with it and *where*, in the terms
of the document the user wrote (``skus.SKU-1.tiers[0].discount_pct``), not in the terms of
our Python models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

ROOT = "(root)"


def loads_strict(data: bytes | str) -> Any:
    """``json.loads`` that also refuses duplicate keys (``json`` silently keeps the last one).

    Raises ``ValueError`` with a readable reason for invalid UTF-8, invalid JSON or a
    duplicate key.
    """
    try:
        return json.loads(data, object_pairs_hook=_refuse_duplicate_keys)
    except _DuplicateKeyError as exc:
        raise ValueError(f"duplicate JSON key {exc.key!r}") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise ValueError(f"not valid JSON: {exc}") from None


def json_path(loc: Sequence[str | int]) -> str:
    """``("skus", "SKU-1", "tiers", 0, "discount_pct")`` -> ``skus.SKU-1.tiers[0].discount_pct``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "[key]":  # pydantic's marker for an invalid dictionary key
            path += " (key)"
        else:
            path += f".{part}" if path else part
    return path or ROOT


def validation_problems(exc: ValidationError) -> list[str]:
    """Every error of ``exc`` as ``"<json path>: <reason>"``, in document order."""
    problems = []
    for error in exc.errors(include_url=False):
        message = error["msg"]
        if error["type"] == "value_error":
            # Drop pydantic's "Value error, " prefix: our own messages are already sentences.
            message = str(error.get("ctx", {}).get("error", message))
        problems.append(f"{json_path(error['loc'])}: {message}")
    return problems


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result
