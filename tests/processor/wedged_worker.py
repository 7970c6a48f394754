"""A processor worker process whose rating step hangs until the test lets it go.

:func:`main` is a :data:`~processor.supervisor.WorkerMain` (module-level, so that ``spawn``
can import it): the real :func:`~billing.processor_process.run_worker_process`, with
:meth:`RatingStep.handle` replaced by one that blocks, as a read from a socket that never
answers would, until the file :func:`release_file` names exists, then drops the item.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path

from billing.processor_process import run_worker_process
from processor.rating_step import RatingStep
from processor.wedged_report import WedgedReport
from shared.domain.priority import Priority
from shared.settings import Settings


def release_file(settings: Settings) -> Path:
    """Created by the test to let the hung handler return."""
    return settings.data_dir / "release-the-handler"


def main(
    settings: Settings, priorities: Sequence[Priority], stop: ProcessEvent, report: WedgedReport
) -> None:
    release = release_file(settings)

    def hang(_step: RatingStep, text: str, dequeue_count: int = 1) -> int:
        while not release.exists() and not stop.is_set():
            time.sleep(0.02)
        return 0

    RatingStep.handle = hang  # type: ignore[method-assign]
    run_worker_process(settings, priorities, stop, report)
