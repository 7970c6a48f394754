"""The batch parser on JSON Lines files: strict JSON types, same field rules as CSV."""

from __future__ import annotations

import pytest

from initiator.intake.blank_lines import MAX_BLANK_LINES
from tests.unit.batch_files import (
    accepted,
    jsonl_body,
    only_problem,
    record,
    rejected,
    transaction,
)

NDJSON = "application/x-ndjson"


@pytest.mark.parametrize(
    "content_type",
    [NDJSON, "application/jsonl", "application/json-lines", None, "application/octet-stream"],
)
def test_json_lines_give_the_exact_transactions(content_type: str | None) -> None:
    body = jsonl_body(
        record(transaction_id="T1"),
        record(
            transaction_id="T2",
            customer_id="C2",
            sku="API-CALLS",
            quantity=1_000_000,
            region="US",
            occurred_at="2026-06-30T12:00:00.5-03:30",
        ),
    )
    assert accepted(body, content_type=content_type) == [
        (1, transaction("T1")),
        (2, transaction("T2", "C2", "API-CALLS", 1_000_000, "US", "2026-06-30T12:00:00.5-03:30")),
    ]


def test_the_timestamp_keeps_its_text_as_written_for_the_payload() -> None:
    body = jsonl_body(record(occurred_at="2026-06-30T12:00:00.5-03:30"))
    [(_, parsed)] = accepted(body, content_type=NDJSON)
    assert parsed.occurred_at_text == "2026-06-30T12:00:00.5-03:30"


def test_extra_keys_blank_lines_crlf_bom_and_no_final_newline() -> None:
    first = jsonl_body(record(transaction_id="T1", note="ignored", nested={"a": [1]}))
    last = jsonl_body(record(transaction_id="T2")).rstrip(b"\n")
    body = b"\xef\xbb\xbf" + first.replace(b"\n", b"\r\n") + b"\r\n  \n" + last
    assert accepted(body, content_type=NDJSON) == [(1, transaction("T1")), (4, transaction("T2"))]


def test_sniffing_sees_through_leading_blank_lines() -> None:
    body = b"\n\n" + jsonl_body(record())
    assert accepted(body, content_type="text/plain") == [(3, transaction())]


def test_invalid_json_is_malformed() -> None:
    body = jsonl_body(record(transaction_id="T1")) + b'{"transaction_id": "T2",\n'
    rejection = rejected(body, content_type=NDJSON)
    assert rejection.status_code == 400
    line, field, reason = only_problem(rejection)
    assert (line, field) == (2, None)
    assert reason.startswith("invalid JSON: Expecting property name enclosed in double quotes")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
        (
            b'{"quantity": ' + b"9" * 5_000 + b"}",
            "invalid JSON: a number with more than 4,300 digits",
        ),
    ],
)
def test_hostile_json_is_refused_cleanly(line: bytes, reason: str) -> None:
    rejection = rejected(jsonl_body(record()) + line + b"\n", content_type=NDJSON)
    assert rejection.status_code == 400
    found_line, field, found = only_problem(rejection)
    assert (found_line, field) == (2, None)
    assert found.startswith(reason)


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b"[1, 2]", "an array"),
        (b'"T1"', "a string ('T1')"),
        (b"42", "an integer"),
        (b"null", "null"),
    ],
)
def test_a_line_that_is_not_an_object(line: bytes, kind: str) -> None:
    rejection = rejected(jsonl_body(record()) + line + b"\n", content_type=NDJSON)
    assert rejection.status_code == 422
    assert only_problem(rejection) == (2, None, f"the line is not a JSON object but {kind}")


@pytest.mark.parametrize(
    ("quantity", "kind"),
    [
        (True, "a boolean (true)"),
        (False, "a boolean (false)"),
        (5.0, "a number with a fraction or exponent (5.0)"),
        ("5", "a string ('5')"),
        (None, "null"),
    ],
)
def test_quantity_must_be_a_json_integer(quantity: object, kind: str) -> None:
    rejection = rejected(jsonl_body(record(quantity=quantity)), content_type=NDJSON)
    assert rejection.status_code == 422
    assert only_problem(rejection) == (
        1,
        "quantity",
        f"quantity must be a JSON integer, not {kind}",
    )


@pytest.mark.parametrize("quantity", [0, -3, 1_000_001])
def test_quantity_range(quantity: int) -> None:
    line, field, reason = only_problem(
        rejected(jsonl_body(record(quantity=quantity)), content_type=NDJSON)
    )
    assert (line, field) == (1, "quantity")
    assert reason == f"quantity {quantity} is out of range (1 to 1,000,000)"


@pytest.mark.parametrize("field", ["transaction_id", "customer_id", "sku", "region", "occurred_at"])
def test_string_fields_must_be_json_strings(field: str) -> None:
    rejection = rejected(jsonl_body(record(**{field: 17})), content_type=NDJSON)
    assert only_problem(rejection) == (1, field, f"{field} must be a JSON string, not an integer")


def test_wrongly_typed_and_wrongly_valued_fields_are_all_reported() -> None:
    body = jsonl_body(record(transaction_id=7, region="eu", quantity=True))
    rejection = rejected(body, content_type=NDJSON)
    assert [(p.line, p.field) for p in rejection.problems] == [
        (1, "transaction_id"),
        (1, "quantity"),
        (1, "region"),
    ]


def test_missing_field_suggests_a_close_key() -> None:
    item = record()
    item["Region"] = item.pop("region")
    rejection = rejected(jsonl_body(item), content_type=NDJSON)
    assert only_problem(rejection) == (
        1,
        "region",
        "missing field 'region'; the object has 'Region': did you mean 'region'?",
    )


def test_duplicate_transaction_id_across_lines() -> None:
    body = jsonl_body(
        record(transaction_id="A"), record(transaction_id="B"), record(transaction_id="A")
    )
    assert only_problem(rejected(body, content_type=NDJSON)) == (
        3,
        "transaction_id",
        "duplicate transaction_id 'A': first seen on line 1",
    )


def test_field_rules_apply_as_in_csv() -> None:
    body = jsonl_body(
        record(transaction_id="T1", occurred_at="2026-01-05T10:00:00"),
        record(transaction_id="T 2"),
        record(transaction_id="T3", sku="sku-1"),
    )
    rejection = rejected(body, content_type=NDJSON)
    assert rejection.status_code == 422
    assert [(p.line, p.field) for p in rejection.problems] == [
        (1, "occurred_at"),
        (2, "transaction_id"),
        (3, "sku"),
    ]
    assert "has no UTC offset" in rejection.problems[0].reason


def test_only_blank_lines_is_an_empty_batch() -> None:
    rejection = rejected(b"\n \n", content_type=NDJSON)
    assert only_problem(rejection) == (None, None, "empty batch: the body holds no data")


def test_blank_lines_beyond_the_cap_stop_the_scan() -> None:
    body = b"\n" * (MAX_BLANK_LINES + 1) + jsonl_body(record(transaction_id="T1"))
    rejection = rejected(body, content_type="application/x-ndjson")
    assert rejection.status_code == 400
    assert only_problem(rejection)[:2] == (MAX_BLANK_LINES + 1, None)
