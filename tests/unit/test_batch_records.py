"""Batch records: their table form, their transitions, and the processors' admission rule."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceExistsError, ResourceModifiedError

from shared.contracts.batch_records import (
    BATCH_PARTITION,
    Admission,
    BatchRecord,
    BatchRecords,
    admission,
)
from shared.contracts.batch_status import BatchStatus
from shared.domain.transactions import ControlTotals
from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.ports import Entity

NOW = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
RECEIVING = BatchRecord(
    batch_id="b-1",
    status=BatchStatus.RECEIVING,
    priority="high",
    pricebook_version="abc",
    received_at=NOW,
)


@pytest.fixture
def records(tmp_path: Path) -> BatchRecords:
    table = EmbeddedStorageAccount(tmp_path).table("batches")
    table.create()
    return BatchRecords(table)


def test_properties_round_trip_with_a_checksum_above_int64() -> None:
    totals = ControlTotals(transactions=3, quantity=10, id_checksum=2**64 - 5)
    record = RECEIVING.model_copy(update={"control_totals": totals, "chunks": 2})
    properties = record.to_properties()
    assert properties["control_id_checksum"] == str(2**64 - 5)
    assert properties["status"] == "receiving"
    assert "accepted_at" not in properties  # None is left out, never stored
    assert BatchRecord.from_properties(properties) == record


def test_properties_written_by_other_roles_are_ignored() -> None:
    properties = {**RECEIVING.to_properties(), "dashboard_note": "hi"}
    assert BatchRecord.from_properties(properties) == RECEIVING


def test_transitions_are_etag_guarded(records: BatchRecords) -> None:
    created = records.create(RECEIVING)
    with pytest.raises(ResourceExistsError):
        records.create(RECEIVING)
    accepting = records.save(
        created, RECEIVING.model_copy(update={"status": BatchStatus.ACCEPTING})
    )
    with pytest.raises(ResourceModifiedError):  # the stale ETag of `created`
        records.save(created, RECEIVING.model_copy(update={"status": BatchStatus.ABANDONED}))
    found = records.find("b-1")
    assert found is not None
    assert found == accepting
    assert [s.record.batch_id for s in records.in_status(BatchStatus.ACCEPTING)] == ["b-1"]
    assert list(records.in_status(BatchStatus.RECEIVING)) == []


def test_save_merges_so_other_roles_properties_survive(records: BatchRecords) -> None:
    created = records.create(RECEIVING)
    table_entity = Entity(BATCH_PARTITION, "b-1", {"chunks_applied": 4, "extra": "x"})
    records._table.update(table_entity, if_match=created.etag)  # another role's merge
    current = records.find("b-1")
    assert current is not None
    records.save(current, current.record.model_copy(update={"status": BatchStatus.PROCESSING}))
    after = records.find("b-1")
    assert after is not None
    assert after.record.chunks_applied == 4
    assert after.record.status is BatchStatus.PROCESSING


@pytest.mark.parametrize(
    ("status", "verdict", "state"),
    [
        (BatchStatus.RECEIVING, Admission.WAIT, "pending"),
        (BatchStatus.ACCEPTING, Admission.WAIT, "pending"),
        (BatchStatus.ACCEPTED, Admission.PROCESS, "accepted"),
        (BatchStatus.PROCESSING, Admission.PROCESS, "accepted"),
        (BatchStatus.COMPLETED, Admission.PROCESS, "accepted"),
        (BatchStatus.FAILED, Admission.PROCESS, "accepted"),
        (BatchStatus.ABANDONED, Admission.DROP, "gone"),
    ],
)
def test_admission(
    records: BatchRecords, status: BatchStatus, verdict: Admission, state: str
) -> None:
    record = RECEIVING.model_copy(update={"status": status})
    assert admission(record) is verdict
    records.create(record)
    assert records.state("b-1") == state


def test_a_missing_batch_is_dropped(records: BatchRecords) -> None:
    assert admission(None) is Admission.DROP
    assert records.state("never-seen") == "gone"
