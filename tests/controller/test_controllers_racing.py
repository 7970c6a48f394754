"""Two controller processes share the output queue and race on the same chunks.

Every result message of one batch is sent twice, the copies side by side, and two
controller *processes* (each with two handlers per receive) drain the queue: copies of one
chunk are taken by both processes at the same moment. On Azurite + PostgreSQL (and on the
embedded backend + SQLite) each chunk must still be applied exactly once: one applied
mark per chunk, one charge per transaction with the reference rater's figures, invoices
equal to their charges, the batch reconciled and closed once, and every copy either
applied or skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import Engine

from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.checks import (
    applied_chunk_count,
    assert_charges_match_the_reference,
    assert_invoices_match_the_reference,
    batch_row,
)
from tests.controller.conftest import wait_until_closed
from tests.controller.killed_controller import settings_to_json

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_two_controller_processes_racing_on_one_batch_apply_each_chunk_once(
    settings: Settings, storage: StorageAccount, warehouse: Engine, tmp_path: Path
) -> None:
    transactions = make_transactions(400, seed=29)
    batch = publish_batch(storage, settings, "b-racing", transactions, chunk_size=10)
    output = storage.queue(settings.output_queue)
    for message in batch.results:
        output.send(message.to_text())
        output.send(message.to_text())

    go = tmp_path / "go"
    command = [sys.executable, "-m", "tests.controller.controller_process"]
    children = [
        subprocess.Popen(
            [*command, settings_to_json(settings), batch.batch_id, str(go)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for child in children:  # both migrated and waiting: then they start draining together
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready"
    go.touch()
    outputs = [child.communicate(timeout=150) for child in children]
    for child, (_, stderr) in zip(children, outputs, strict=True):
        assert child.returncode == 0, stderr.decode(errors="replace")[-3000:]
    snapshots = [json.loads(stdout.decode().strip().splitlines()[-1]) for stdout, _ in outputs]

    record = wait_until_closed(storage, settings, batch.batch_id)
    assert record.reconciled is True
    assert applied_chunk_count(warehouse, batch.batch_id) == len(batch.chunks)
    assert_charges_match_the_reference(warehouse, batch.batch_id, transactions)
    assert_invoices_match_the_reference(warehouse, batch.batch_id, transactions)
    assert batch_row(warehouse, batch.batch_id)["status"] == "completed"
    assert sum(s["batches_closed"] for s in snapshots) == 1
    assert sum(s["chunks_applied"] for s in snapshots) == len(batch.chunks)
    assert sum(s["chunks_applied"] + s["chunks_skipped"] for s in snapshots) == 2 * len(
        batch.results
    )
    assert all(s["chunks_applied"] > 0 for s in snapshots), snapshots  # both took part
    assert output.approximate_count() == 0
