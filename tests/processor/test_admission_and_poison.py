"""Work the processor must not rate (yet), and work it cannot rate.

* an item of a batch that never became ``accepted`` (the initiator crashed, the sweeper
  removed the batch) is dropped;
* an item of a batch still ``accepting`` reappears until the batch is accepted;
* an item whose payload is corrupt goes to ``<queue>-poison`` after the set number of
  dequeues, and a ``ChunkFailed`` reaches the output queue.

Embedded backend and Azurite (storage; the trigger bus is embedded).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from initiator.publishing import sweep_orphans
from shared.contracts.batch_records import BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.contracts.chunk_payload import payload_blob_name
from shared.contracts.messages import ChunkFailed
from shared.listener import PoisonRecord
from shared.listener.source import poison_queue
from tests.processor.conftest import WorkerStarter
from tests.processor.deployment import Deployment, Row, wait_until
from tests.processor.reference import TIE_BOOK

ONE_CHUNK: list[list[Row]] = [[("alice", "TIE", 5, "EU"), ("bob", "HALF", 3, "US")]]


class InitiatorCrash(BaseException):
    """Stands for the initiator process dying (the publisher does not catch it)."""


def crash_after_work_items(step: str) -> None:
    if step == "work_item_sent":
        raise InitiatorCrash(step)


def publish_unaccepted(deployment: Deployment) -> str:
    """A batch whose work item is on its queue while its record is still ``accepting``."""
    version = deployment.upload_pricebook(TIE_BOOK)
    with pytest.raises(InitiatorCrash):
        deployment.publish(ONE_CHUNK, pricebook_version=version, fault=crash_after_work_items)
    (record,) = BatchRecords(deployment.storage.table(deployment.settings.batches_table)).in_status(
        BatchStatus.ACCEPTING
    )
    return record.record.batch_id


def test_an_item_of_a_batch_never_accepted_is_dropped(
    any_deployment: Deployment, start_worker: WorkerStarter
) -> None:
    deployment = any_deployment
    batch_id = publish_unaccepted(deployment)
    assert sweep_orphans(deployment.storage, deployment.settings, timedelta(0)) == [batch_id]
    assert deployment.work_depth() == 1

    worker = start_worker(deployment)

    assert wait_until(lambda: deployment.work_depth() == 0)
    assert worker.snapshot().listener.handled == 1
    assert deployment.output() == []
    assert [report.batch_id for report in deployment.abandoned_reports()] == [batch_id]


def test_an_item_of_a_batch_still_accepting_reappears_until_accepted(
    any_deployment: Deployment, start_worker: WorkerStarter
) -> None:
    deployment = any_deployment
    batch_id = publish_unaccepted(deployment)
    # A full minute of visibility: only the handler's RetryLater (1 s, then 2 s …) can bring
    # the item back within the wait below.
    worker = start_worker(
        deployment, visibility_timeout=60, max_dequeue_count=50, safety_poll_seconds=0.5
    )

    def dequeues() -> int:
        queues = [deployment.storage.queue(q) for q in deployment.settings.all_work_queues()]
        return max((m.dequeue_count for q in queues for m in q.peek()), default=0)

    # Each attempt is deferred ("not accepted yet") and the item comes back in seconds.
    assert wait_until(lambda: dequeues() >= 2, timeout=20)
    assert worker.snapshot().listener.errors == 0
    assert deployment.work_depth() == 1
    assert deployment.output() == []

    records = BatchRecords(deployment.storage.table(deployment.settings.batches_table))
    stored = records.find(batch_id)
    assert stored is not None
    records.save(stored, stored.record.model_copy(update={"status": BatchStatus.ACCEPTED}))

    assert wait_until(lambda: len(deployment.results()) == 1, timeout=20)
    assert deployment.results()[0].batch_id == batch_id
    assert wait_until(lambda: deployment.work_depth() == 0)


def test_a_corrupt_payload_is_poisoned_and_the_batch_told(
    any_deployment: Deployment, start_worker: WorkerStarter
) -> None:
    deployment = any_deployment
    settings = deployment.settings
    version = deployment.upload_pricebook(TIE_BOOK)
    batch_id = deployment.publish(ONE_CHUNK, pricebook_version=version)
    payloads = deployment.storage.container(settings.payload_container)
    payloads.put(payload_blob_name(batch_id, 0), b"\x1f\x8b not what was stored")
    max_dequeues = 2

    worker = start_worker(
        deployment, visibility_timeout=1, max_dequeue_count=max_dequeues, safety_poll_seconds=0.5
    )

    assert wait_until(lambda: any(isinstance(m, ChunkFailed) for m in deployment.output()))
    (failed,) = deployment.output()
    assert isinstance(failed, ChunkFailed)
    assert (failed.batch_id, failed.chunk) == (batch_id, 0)
    assert "ChunkIntegrityError" in failed.error
    work_queue = failed.poison_queue.removesuffix("-poison")
    assert failed.poison_queue == poison_queue(work_queue)
    (poisoned,) = deployment.storage.queue(failed.poison_queue).peek()
    record = PoisonRecord.model_validate(json.loads(poisoned.content))
    assert record.source_queue == work_queue
    assert record.dequeue_count == max_dequeues + 1
    assert json.loads(record.content)["batch_id"] == batch_id
    assert wait_until(lambda: deployment.work_depth() == 0)
    assert worker.snapshot().listener.poisoned == 1
