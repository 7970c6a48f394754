"""The batch event's contract: its id, its CloudEvents attributes, and the JSON schema file
the docs publish (docs/schemas/batch-event.schema.json), checked by an independent validator."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from shared.contracts.batch_event import Outcome, batch_event, encode, event_id, json_schema
from shared.domain.transactions import ControlTotals

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "batch-event.schema.json"
TOTALS = ControlTotals(transactions=3, quantity=7, id_checksum=2**64 - 1)


def an_event(outcome: Outcome = Outcome.COMPLETED, **changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "batch_id": "20261205-010203-abcdef012345",
        "outcome": outcome,
        "time": datetime(2026, 12, 5, 1, 2, 3, tzinfo=UTC),
        "priority": "normal",
        "chunks": 2,
        "chunks_applied": 2,
        "failed_chunks": (),
        "control_totals": TOTALS,
        "warehouse_totals": TOTALS,
        "reconciled": True,
    }
    return batch_event(**(values | changes))


def test_the_schema_file_is_the_one_the_code_describes() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema(), (
        "regenerate it: python -c 'import json; from shared.contracts.batch_event import "
        "json_schema; print(json.dumps(json_schema(), indent=2))' > " + str(SCHEMA_FILE)
    )


@pytest.mark.parametrize("outcome", list(Outcome))
def test_every_outcome_validates_against_the_published_schema(outcome: Outcome) -> None:
    validator = jsonschema_rs.validator_for(json.loads(SCHEMA_FILE.read_text()))
    event = an_event(outcome, failed_chunks=(1,) if outcome is Outcome.FAILED else ())

    validator.validate(json.loads(encode(event)))
    assert event["type"] == f"billing.batch.{outcome.value}"


def test_the_schema_refuses_what_is_not_a_batch_event() -> None:
    validator = jsonschema_rs.validator_for(json.loads(SCHEMA_FILE.read_text()))
    event = json.loads(encode(an_event()))
    for broken in (
        {**event, "specversion": "0.3"},
        {**event, "type": "billing.batch.deleted"},
        {k: v for k, v in event.items() if k != "subject"},
        {**event, "data": {**event["data"], "control_totals": {"transactions": 1}}},
    ):
        assert not validator.is_valid(broken), broken


def test_the_cloudevent_attributes_and_the_figures() -> None:
    event = an_event()

    assert event["specversion"] == "1.0"
    assert event["source"] == "/billing/batches"
    assert event["subject"] == event["data"]["batch_id"] == "20261205-010203-abcdef012345"
    assert event["time"] == "2026-12-05T01:02:03Z"
    assert event["datacontenttype"] == "application/json"
    # 2**64 - 1 survives JSON: a string, as a number it would lose bits in many parsers.
    assert event["data"]["control_totals"]["id_checksum"] == "18446744073709551615"
    assert event["data"]["chunks"] == {"total": 2, "applied": 2, "failed": 0}


def test_one_outcome_has_one_id_and_each_outcome_its_own() -> None:
    first = event_id("b-1", Outcome.FAILED)

    assert (
        first == event_id("b-1", Outcome.FAILED) == an_event(Outcome.FAILED, batch_id="b-1")["id"]
    )
    assert len({first, event_id("b-1", Outcome.COMPLETED), event_id("b-2", Outcome.FAILED)}) == 3


def test_the_encoding_is_stable_bytes() -> None:
    assert encode(an_event()) == encode(json.loads(encode(an_event())))
