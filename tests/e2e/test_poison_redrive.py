"""A chunk that cannot be rated fails its batch; once repaired and redriven, the batch
completes exactly once.

The story an operator lives through: chunk 1's payload blob is corrupted before the
processors see it; its work item is dequeued ``max_dequeue_count`` times, lands in its
poison queue, and the batch closes ``failed`` naming chunk 1. ``billing poison list`` shows
the message and the error; the payload is put back as it was; ``billing poison redrive``
sends the work item back, and the batch moves to ``completed`` and reconciles, with every
transaction in the warehouse once.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select
from typer.testing import CliRunner

from billing.cli.app import app as cli
from billing.sample_batches import write_batch_file
from shared.contracts.chunk_payload import payload_blob_name
from shared.coordination.work_signal import work_signal_version
from shared.settings import Settings
from shared.storage import open_storage
from shared.warehouse import make_engine
from shared.warehouse.models import Charge
from tests.e2e.conftest import SettingsFactory
from tests.e2e.pipeline import running_pipeline

CHUNK_SIZE = 40
TRANSACTIONS = 150  # four chunks
BROKEN_CHUNK = 1
CSV = {"Content-Type": "text/csv"}

runner = CliRunner()


def _environment(settings: Settings) -> dict[str, str]:
    """The storage settings as ``BILLING_*`` variables, for the CLI in this process."""
    names = (
        "data_dir",
        "storage_connection_string",
        "work_queue_prefix",
        "partitions",
        "output_queue",
        "control_container",  # where the redrive moves the work signal
    )
    env = {}
    for name in names:
        value = getattr(settings, name)
        if value is None:
            continue
        if hasattr(value, "get_secret_value"):
            value = value.get_secret_value()
        env[f"BILLING_{name.upper()}"] = str(value)
    return env


def test_a_poisoned_chunk_fails_its_batch_and_a_redrive_completes_it_once(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(
        chunk_size=CHUNK_SIZE,
        visibility_timeout_seconds=1,
        max_dequeue_count=2,
        safety_poll_seconds=0.5,
    )
    path = tmp_path / "batch.csv"
    write_batch_file(path, TRANSACTIONS, seed=5)
    env = _environment(settings)
    storage = open_storage(settings)
    with running_pipeline(settings, processors=1) as pipeline:
        pipeline.client.post("/control/hold").raise_for_status()
        batch_id = pipeline.submit(path, priority="normal", headers=CSV)["batch_id"]
        payloads = storage.container(settings.payload_container)
        blob = payload_blob_name(batch_id, BROKEN_CHUNK)
        original = payloads.get(blob).data
        payloads.put(blob, b"\x1f\x8b damaged in storage")
        pipeline.client.post("/control/release").raise_for_status()

        failed = pipeline.wait_until_closed(batch_id)
        assert failed["status"] == "failed"
        assert failed["failed_chunks"] == [BROKEN_CHUNK]
        assert failed["reconciled"] is False

        listed = runner.invoke(cli, ["poison", "list", "--batch", batch_id], env=env)
        assert listed.exit_code == 0, listed.output
        assert batch_id in listed.output
        assert "ChunkIntegrityError" in listed.output

        payloads.put(blob, original)  # the operator repairs the payload
        control = storage.container(settings.control_container)
        signal_before = work_signal_version(control)
        redriven = runner.invoke(cli, ["poison", "redrive", "--batch", batch_id], env=env)
        assert redriven.exit_code == 0, redriven.output
        assert "redrove 1 message" in redriven.output
        # Idle processors read the work signal, not the queues: the redrive moved it.
        assert work_signal_version(control) != signal_before

        completed = pipeline.wait_until_closed(batch_id, closed=("completed",))
        assert completed["reconciled"] is True
        assert completed["failed_chunks"] == []
        assert completed["chunks"]["applied"] == completed["chunks"]["total"]
        again = runner.invoke(cli, ["poison", "list", "--batch", batch_id], env=env)
        assert "no poisoned messages" in again.output
    storage.close()
    engine = make_engine(settings.resolved_warehouse_url)
    with engine.connect() as connection:
        rows = connection.scalar(
            select(func.count()).select_from(Charge).where(Charge.batch_id == batch_id)
        )
        distinct = connection.scalar(
            select(func.count(func.distinct(Charge.transaction_id))).where(
                Charge.batch_id == batch_id
            )
        )
    engine.dispose()
    assert (rows, distinct) == (TRANSACTIONS, TRANSACTIONS)
