"""JSON Lines batch files: one JSON object per line, with the same field names as the CSV.

Types are strict because JSON has them: ids, codes and the timestamp must be strings, the
quantity a JSON integer (``true`` is not 1, ``5.0`` and ``"5"`` are not 5). Blank lines are
skipped (up to a cap); unknown keys are ignored like extra CSV columns.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from initiator.intake.blank_lines import BlankLines
from initiator.intake.fields import REQUIRED_FIELDS, TransactionValidator
from initiator.intake.problems import ProblemCollector, Status
from shared.domain.transactions import Transaction

_STRING_FIELDS = tuple(field for field in REQUIRED_FIELDS if field != "quantity")
_loads = json.JSONDecoder().decode


def jsonl_records(
    blocks: Iterable[list[str]], validator: TransactionValidator, problems: ProblemCollector
) -> Iterator[tuple[int, Transaction | None]]:
    """Yield ``(line, transaction or None)`` for every non-blank line; None marks a bad one."""
    accept = validator.accept
    line = 0
    records = 0
    blanks = BlankLines(problems)
    for block in blocks:
        for text in block:
            line += 1
            try:
                item = _loads(text)
            except (ValueError, RecursionError) as exc:
                if not text.strip():
                    blanks.skip(line)  # the decoder rejects it; it is no record
                    continue
                records += 1
                problems.add(line, None, _json_problem(exc), Status.MALFORMED)
                yield line, None
                continue
            records += 1
            if type(item) is not dict:
                problems.add(line, None, f"the line is not a JSON object but {_kind(item)}")
                yield line, None
                continue
            try:
                transaction_id = item["transaction_id"]
                customer_id = item["customer_id"]
                sku = item["sku"]
                quantity = item["quantity"]
                region = item["region"]
                occurred_at = item["occurred_at"]
            except KeyError:
                _report_missing(line, item, problems)
                yield line, None
                continue
            if (
                type(transaction_id) is str
                and type(customer_id) is str
                and type(sku) is str
                and type(quantity) is int
                and type(region) is str
                and type(occurred_at) is str
            ):
                yield (
                    line,
                    accept(line, transaction_id, customer_id, sku, quantity, region, occurred_at),
                )
            else:
                _report_types(line, item, validator, problems)
                yield line, None
    if not records:
        problems.add(None, None, "empty batch: the body holds no data", Status.MALFORMED)


def _json_problem(exc: ValueError | RecursionError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "invalid JSON: nested too deeply"
    if "integer string conversion" in str(exc):
        # Python's own words name an interpreter setting; the sender needs the rule.
        return "invalid JSON: a number with more than 4,300 digits"
    return f"invalid JSON: {exc}"


def _report_missing(line: int, item: dict[str, Any], problems: ProblemCollector) -> None:
    for field in REQUIRED_FIELDS:
        if field not in item:
            close = difflib.get_close_matches(field, [str(key) for key in item], n=1)
            hint = f"; the object has {close[0]!r}: did you mean {field!r}?" if close else ""
            problems.add(line, field, f"missing field {field!r}{hint}")


def _report_types(
    line: int, item: dict[str, Any], validator: TransactionValidator, problems: ProblemCollector
) -> None:
    """Name every field of the wrong JSON type, then check the well-typed ones' values."""
    values: dict[str, str] = {}
    for field in _STRING_FIELDS:
        value = item[field]
        if type(value) is str:
            values[field] = value
        else:
            problems.add(line, field, f"{field} must be a JSON string, not {_kind(value)}")
    quantity = item["quantity"]
    if type(quantity) is not int:
        problems.add(line, "quantity", f"quantity must be a JSON integer, not {_kind(quantity)}")
    validator.check_values(line, values, quantity if type(quantity) is int else None)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return f"a number with a fraction or exponent ({value!r})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    return "an object"
