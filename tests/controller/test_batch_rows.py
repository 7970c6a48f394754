"""controller.batch_rows: which batches have a warehouse row, in bounded memory."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from controller import batch_rows
from controller.batch_rows import BatchRows
from shared.contracts.batch_records import BatchRecords
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import make_transactions, publish_batch


def test_a_controller_remembers_only_recent_batches_and_still_knows_the_others(
    settings: Settings,
    storage: StorageAccount,
    warehouse: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A controller meets every batch for months: what it remembers must not grow with them.
    monkeypatch.setattr(batch_rows, "REMEMBERED_BATCHES", 3)
    rows = BatchRows(warehouse)
    records = BatchRecords(storage.table(settings.batches_table))
    batch_ids = []
    for number in range(6):
        batch = publish_batch(
            storage, settings, f"b-rows-{number}", make_transactions(4, seed=number), chunk_size=4
        )
        stored = records.find(batch.batch_id)
        assert stored is not None
        rows.ensure(stored.record)
        batch_ids.append(batch.batch_id)
    assert rows.remembered == 3
    # A forgotten batch is looked up in the warehouse instead, and still found.
    assert all(BatchRows(warehouse).exists(batch_id) for batch_id in batch_ids)
    assert rows.exists(batch_ids[0])
    assert not rows.exists("b-rows-never")
    assert rows.remembered == 3
