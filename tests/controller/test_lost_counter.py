"""A lost order-id counter heals: the next batches complete, with unique ids, nothing poisoned.

The counter blob lives in storage and the charges in the warehouse; recreating the storage
(an emulator restarted without its volume, an account recreated) or restoring the
warehouse alone leaves the counter behind the ids already used. A controller that starts
then moves the counter past the warehouse's highest order id before its first range; one
already running finds out from the collision of its next range and does the same.
"""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from shared.contracts.batch_status import BatchStatus
from shared.coordination.ids import DEFAULT_COUNTER_BLOB
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse.models import Charge
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.checks import assert_charges_match_the_reference
from tests.controller.conftest import WorkerFactory, wait_until_closed
from tests.controller.test_controller import send

CHUNK_SIZE = 40


def _lose_the_counter(storage: StorageAccount, settings: Settings) -> None:
    storage.container(settings.control_container).delete(DEFAULT_COUNTER_BLOB)


def _run_batch(
    storage: StorageAccount, settings: Settings, batch_id: str, seed: int
) -> tuple[str, list[object]]:
    transactions = make_transactions(160, seed=seed)
    batch = publish_batch(storage, settings, batch_id, transactions, chunk_size=CHUNK_SIZE)
    send(storage, settings, *(message.to_text() for message in batch.results))
    return batch.batch_id, list(transactions)


def _assert_unique_ids_and_no_poison(
    warehouse: Engine, storage: StorageAccount, settings: Settings
) -> None:
    with warehouse.connect() as connection:
        count = connection.scalar(select(func.count()).select_from(Charge))
        distinct = connection.scalar(select(func.count(func.distinct(Charge.order_id))))
    assert count == distinct == 320
    poison = f"{settings.output_queue}-poison"
    # Made when the first message is poisoned: absent or empty, nothing was.
    assert poison not in storage.list_queues() or storage.queue(poison).approximate_count() == 0


def test_a_controller_started_after_the_counter_was_lost_moves_it_past_the_warehouse(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    first = start_worker()
    first_id, _ = _run_batch(storage, settings, "b-before-loss", seed=3)
    assert wait_until_closed(storage, settings, first_id).status is BatchStatus.COMPLETED
    first.stop()
    _lose_the_counter(storage, settings)

    second = start_worker()
    second_id, second_transactions = _run_batch(storage, settings, "b-after-loss", seed=4)
    record = wait_until_closed(storage, settings, second_id)

    assert (record.status, record.reconciled, record.chunks_failed) == (
        BatchStatus.COMPLETED,
        True,
        0,
    )
    assert_charges_match_the_reference(warehouse, second_id, second_transactions)  # type: ignore[arg-type]
    _assert_unique_ids_and_no_poison(warehouse, storage, settings)
    assert second.snapshot().order_id_reservations >= 1
    assert second._allocator.floor_moves == 1


def test_a_running_controller_heals_the_counter_on_the_collision_of_its_next_range(
    settings: Settings, storage: StorageAccount, warehouse: Engine, start_worker: WorkerFactory
) -> None:
    worker = start_worker(handler_parallelism=1)
    first_id, _ = _run_batch(storage, settings, "b-running-1", seed=5)
    assert wait_until_closed(storage, settings, first_id).status is BatchStatus.COMPLETED
    # The settings' ranges are 50 ids: the next batch needs new ranges from a new counter.
    _lose_the_counter(storage, settings)

    second_id, second_transactions = _run_batch(storage, settings, "b-running-2", seed=6)
    record = wait_until_closed(storage, settings, second_id)

    assert (record.status, record.reconciled, record.chunks_failed) == (
        BatchStatus.COMPLETED,
        True,
        0,
    )
    assert_charges_match_the_reference(warehouse, second_id, second_transactions)  # type: ignore[arg-type]
    _assert_unique_ids_and_no_poison(warehouse, storage, settings)
    assert worker._allocator.floor_moves == 1
