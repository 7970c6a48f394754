"""Messages from a newer writer of the same version: an older reader takes them.

In a rolling upgrade the roles' revisions change one at a time, so for a while a processor
reads work items from a newer initiator (and a controller results from a newer processor).
A field added within a version must not send the message to the poison queue.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from controller.results import parse_output_message
from shared.contracts.messages import (
    BatchAbandoned,
    ChunkFailed,
    ChunkResult,
    TriggerEvent,
    WorkItem,
)

WORK_ITEM = WorkItem(
    batch_id="b",
    chunk=0,
    priority="normal",
    payload_blob="b/0",
    first_line=2,
    last_line=3,
    transactions=2,
    sha256="0" * 64,
    pricebook_version="v",
)


def with_field(message: str, **fields: object) -> str:
    return json.dumps(json.loads(message) | fields)


def test_a_work_item_with_a_field_this_reader_does_not_know_is_read() -> None:
    newer = with_field(WORK_ITEM.to_text(), deadline="2030-01-01T00:00:00Z")
    assert WorkItem.from_text(newer) == WORK_ITEM


def test_results_and_failures_with_new_fields_keep_their_kind() -> None:
    result = ChunkResult(
        batch_id="b", chunk=1, result_blob="b/1", transactions=2, sha256="1" * 64, processor="p"
    )
    failed = ChunkFailed(batch_id="b", chunk=2, poison_queue="work-normal-0-poison", error="x")
    assert parse_output_message(with_field(result.to_text(), rows_format=2)) == result
    assert parse_output_message(with_field(failed.to_text(), attempts=5)) == failed
    abandoned = BatchAbandoned(
        batch_id="b",
        priority="low",
        reason="intake_stopped",
        abandoned_at="2026-12-05T01:02:03Z",
        transactions=0,
        chunks=0,
        control_totals=None,
    )
    assert parse_output_message(with_field(abandoned.to_text(), node="i-1")) == abandoned


def test_a_trigger_with_a_new_field_is_read() -> None:
    event = TriggerEvent(
        storage_account="devstoreaccount1",
        queue_names=["work-normal-0"],
        payload_size=10,
        batch_id="b",
        priority="normal",
        chunk_count=1,
    )
    assert TriggerEvent.from_text(with_field(event.to_text(), region="westeurope")) == event


def test_another_version_is_still_refused() -> None:
    with pytest.raises(ValidationError):
        WorkItem.from_text(with_field(WORK_ITEM.to_text(), v=2))
