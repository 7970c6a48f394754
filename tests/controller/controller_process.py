"""A controller process for the racing test: runs until a batch closes, prints its snapshot.

``python -m tests.controller.controller_process SETTINGS_JSON BATCH_ID GO_FILE`` migrates
the warehouse, prints ``ready``, waits for ``GO_FILE`` to exist (so that both processes
start draining at the same moment), then runs a real
:class:`~controller.worker.ControllerWorker` (two handlers per receive, so copies of one
chunk can be in flight in both processes at once) until the batch record closes, stops,
and prints the worker's snapshot as JSON on its last line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from controller.worker import ControllerWorker
from shared.contracts.batch_records import BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage import open_storage
from shared.warehouse import upgrade

CLOSED = (BatchStatus.COMPLETED, BatchStatus.FAILED)
TIMEOUT_SECONDS = 90.0


def main() -> None:
    settings = Settings(_env_file=None, **json.loads(sys.argv[1]))  # type: ignore[call-arg]
    batch_id, go = sys.argv[2], Path(sys.argv[3])
    upgrade(settings.resolved_warehouse_url)
    print("ready", flush=True)
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    storage = open_storage(settings)
    records = BatchRecords(storage.table(settings.batches_table))
    config = listener_config(settings, handler_parallelism=2)
    worker = ControllerWorker(settings, storage, listener_config=config)
    worker.start()
    try:
        while time.monotonic() < deadline:
            stored = records.find(batch_id)
            if stored is not None and stored.record.status in CLOSED:
                break
            time.sleep(0.05)
        # Let the duplicates still queued be taken and skipped before stopping.
        output = storage.queue(settings.output_queue)
        while time.monotonic() < deadline and output.approximate_count() > 0:
            time.sleep(0.05)
    finally:
        worker.stop(10)
        storage.close()
    print(worker.snapshot().model_dump_json())


if __name__ == "__main__":
    main()
