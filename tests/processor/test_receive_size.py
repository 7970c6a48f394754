"""A processor takes two work items a receive (``BILLING_PROCESSOR_DEQUEUE_BATCH_SIZE``):
one to rate while the next one's payload downloads. A work item is a whole chunk, a tenth
of a second or more of rating, so what one instance takes beyond that waits there while
another instance, or process, could be rating it.

Runs on the embedded backend and on Azurite (storage; the trigger bus is embedded).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from processor.rating_step import RatingStep
from shared.contracts.chunk_result import decode_result
from shared.contracts.messages import ChunkResult, WorkItem
from tests.processor.conftest import WorkerStarter
from tests.processor.deployment import Deployment, Row, wait_until
from tests.processor.reference import TIE_BOOK

#: Six one-row chunks: three on each of the deployment's two partitions.
CHUNKS: list[list[Row]] = [[("alice", "TIE", 5 + chunk, "EU")] for chunk in range(6)]


def visible_work(deployment: Deployment) -> int:
    """Work items another instance could receive now (a peek sees no leased message)."""
    names = deployment.settings.all_work_queues()
    return sum(len(deployment.storage.queue(name).peek()) for name in names)


@contextmanager
def holding_every_chunk(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Processors hold every chunk they rate until the block ends; the list says which
    chunks are held."""
    held: list[int] = []
    release = threading.Event()
    rate = RatingStep.rate

    def rate_when_released(step: RatingStep, item: WorkItem) -> ChunkResult:
        held.append(item.chunk)
        release.wait(30)
        return rate(step, item)

    monkeypatch.setattr(RatingStep, "rate", rate_when_released)
    try:
        yield held
    finally:
        release.set()


def held_at_once(
    deployment: Deployment,
    start_worker: WorkerStarter,
    monkeypatch: pytest.MonkeyPatch,
    **options: object,
) -> int:
    version = deployment.upload_pricebook(TIE_BOOK)
    deployment.publish(CHUNKS, pricebook_version=version)
    assert visible_work(deployment) == len(CHUNKS)
    with holding_every_chunk(monkeypatch) as held:
        start_worker(deployment, **options)
        assert wait_until(lambda: len(held) > 0)
        wait_until(lambda: False, timeout=0.3)  # room for a receive that should not come
        taken = len(CHUNKS) - visible_work(deployment)
        # every item taken is being rated (the handlers may take a moment to get there)
        assert wait_until(lambda: len(held) == taken)
    assert wait_until(lambda: len(deployment.results()) == len(CHUNKS))
    results = deployment.storage.container(deployment.settings.results_container)
    for result in deployment.results():
        assert len(decode_result(results.get(result.result_blob).data).charges) == 1
    return taken


def test_a_processor_takes_two_chunks_and_leaves_the_rest_to_the_others(
    any_deployment: Deployment, start_worker: WorkerStarter, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert held_at_once(any_deployment, start_worker, monkeypatch) == 2


def test_with_the_queues_own_receive_size_it_takes_a_whole_partition(
    any_deployment: Deployment, start_worker: WorkerStarter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the setting changes: 32 a receive take the three items of a partition at once."""
    assert held_at_once(any_deployment, start_worker, monkeypatch, batch_size=32) == 3
