"""A processor killed while it holds a work item: the item comes back for another one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.processor.conftest import WorkerStarter
from tests.processor.deployment import Deployment, wait_until
from tests.processor.reference import TIE_BOOK

REPO = Path(__file__).resolve().parents[2]


def test_a_killed_processors_item_is_redelivered_after_the_timeout_and_handled_elsewhere(
    deployment: Deployment, start_worker: WorkerStarter, tmp_path: Path
) -> None:
    version = deployment.upload_pricebook(TIE_BOOK)
    batch_id = deployment.publish([[("alice", "TIE", 5, "EU")]], pricebook_version=version)
    marker = tmp_path / "holding"
    doomed = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.processor.stalling_worker",
            deployment.settings.model_dump_json(),
            str(marker),
        ],
        cwd=REPO,
    )
    try:
        assert wait_until(marker.exists, timeout=60), "the doomed processor never took the item"
        os.kill(doomed.pid, signal.SIGKILL)
    finally:
        doomed.kill()
        doomed.wait(10)
    assert marker.read_text() == batch_id
    queues = [deployment.storage.queue(n) for n in deployment.settings.all_work_queues()]
    # Still hidden by the dead process's receive, though still on its queue.
    assert [m for q in queues for m in q.peek()] == []
    assert deployment.work_depth() == 1

    rescuer = start_worker(deployment, safety_poll_seconds=0.5)

    assert wait_until(lambda: len(deployment.results()) == 1, timeout=20)
    (result,) = deployment.results()
    assert (result.batch_id, result.processor) == (batch_id, rescuer.instance_id)
    assert wait_until(lambda: deployment.work_depth() == 0)
