"""A processor process that takes a work item and then hangs on it (for the SIGKILL test).

Run as ``python -m tests.processor.stalling_worker SETTINGS_JSON MARKER_FILE``: a real
:class:`ProcessorWorker` whose rating step is replaced by one that writes ``MARKER_FILE``
(so the test knows the item is held) and then never returns.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from processor.rating_step import RatingStep
from processor.worker import ProcessorWorker
from shared.bus import open_bus
from shared.contracts.messages import ChunkResult, WorkItem
from shared.settings import Settings
from shared.storage import open_storage
from tests.processor.deployment import fast_worker_options

#: long enough that the test kills the process before any renewal is due
VISIBILITY_TIMEOUT = 4


def main(settings_json: str, marker: Path) -> None:
    settings = Settings(_env_file=None, **json.loads(settings_json))  # type: ignore[call-arg]

    def hang(_step: RatingStep, item: WorkItem) -> ChunkResult:
        marker.write_text(item.batch_id)
        time.sleep(3600)
        raise AssertionError("unreachable: the test kills this process")

    RatingStep.rate = hang  # type: ignore[method-assign, assignment]
    worker = ProcessorWorker(
        settings,
        open_storage(settings),
        open_bus(settings),
        instance_id="doomed",
        **fast_worker_options(visibility_timeout=VISIBILITY_TIMEOUT),
    )
    worker.start()
    time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
