"""The controller hears the trigger topic: an accepted batch wakes its sleeping listener."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import select

from controller.worker import ControllerWorker, controller_listener_config
from shared.bus.embedded import EmbeddedSubscription, EmbeddedTriggerBus
from shared.bus.ports import SubscriptionSpec
from shared.contracts.messages import KIND_PROPERTY, PRIORITY_PROPERTY, TriggerEvent
from shared.coordination.gate import set_gate
from shared.listener import QueueListener
from shared.listener.backoff import Backoff
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse import make_engine
from shared.warehouse.models import Batch
from tests.controller.batches import PublishedBatch, make_transactions, publish_batch
from tests.controller.conftest import wait_until_closed
from tests.listener.helpers import make_sources, memq, wait_until
from tests.support.memory_queue import MemoryQueues


def publish_trigger(
    bus: EmbeddedTriggerBus, storage: StorageAccount, batch: PublishedBatch
) -> None:
    """The trigger intake publishes for ``batch`` once its work items are queued."""
    event = TriggerEvent(
        storage_account=storage.account_name,
        queue_names=["work-normal-0"],
        payload_size=0,
        batch_id=batch.batch_id,
        priority="normal",
        chunk_count=len(batch.chunks),
    )
    bus.publish(event.to_text().encode(), {PRIORITY_PROPERTY: "normal", KIND_PROPERTY: "work"})


@contextmanager
def controller_on(
    bus: EmbeddedTriggerBus, settings: Settings, storage: StorageAccount, **options: Any
) -> Iterator[ControllerWorker]:
    """A started controller worker that hears ``bus``; stopped, and the bus closed, after."""
    bus.ensure_topic()
    worker = ControllerWorker(settings, storage, bus=bus, **options)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop(5)
        bus.close()


def test_a_trigger_wakes_the_controller_out_of_its_back_off(
    settings: Settings, storage: StorageAccount, tmp_path: Path
) -> None:
    bus = EmbeddedTriggerBus(tmp_path / "bus", settings.trigger_topic)
    # After its first empty receive the controller's only thread sleeps at least 30 s.
    config = listener_config(
        settings, backoff_min_idle=30.0, backoff_max_idle=60.0, scaling_rule="0:1"
    )
    with controller_on(bus, settings, storage, listener_config=config):
        time.sleep(0.5)  # it has found the output queue empty and gone to sleep
        batch = publish_batch(storage, settings, "b-woken", make_transactions(40), chunk_size=20)
        output = storage.queue(settings.output_queue)
        for message in batch.results:
            output.send(message.to_text())
        publish_trigger(bus, storage, batch)

        record = wait_until_closed(storage, settings, batch.batch_id, timeout=10)
        assert record.reconciled is True


def test_a_gate_release_wakes_the_controller_out_of_its_back_off(
    settings: Settings, storage: StorageAccount, tmp_path: Path
) -> None:
    # Held processors were released: their results land on the output queue while the
    # controller, woken by the batch's trigger long ago, sleeps in its back-off.
    bus = EmbeddedTriggerBus(tmp_path / "bus", settings.trigger_topic)
    config = listener_config(
        settings, backoff_min_idle=30.0, backoff_max_idle=60.0, scaling_rule="0:1"
    )
    with controller_on(bus, settings, storage, listener_config=config):
        time.sleep(0.5)  # it has found the output queue empty and gone to sleep
        batch = publish_batch(storage, settings, "b-released", make_transactions(40), chunk_size=20)
        output = storage.queue(settings.output_queue)
        for message in batch.results:
            output.send(message.to_text())
        set_gate(storage.container(settings.control_container), bus, released=True)

        record = wait_until_closed(storage, settings, batch.batch_id, timeout=10)
        assert record.reconciled is True


def test_a_trigger_prepares_the_batch_before_its_first_result_comes(
    settings: Settings, storage: StorageAccount, tmp_path: Path
) -> None:
    # Its warehouse row and an order-id range are what the first result would wait for.
    bus = EmbeddedTriggerBus(tmp_path / "bus", settings.trigger_topic)
    engine = make_engine(settings.resolved_warehouse_url)
    try:
        with controller_on(bus, settings, storage) as worker:
            batch = publish_batch(
                storage, settings, "b-expected", make_transactions(40), chunk_size=20
            )
            assert worker.snapshot().order_id_reservations == 0
            publish_trigger(bus, storage, batch)

            def prepared() -> bool:
                with engine.connect() as connection:
                    row = connection.scalar(
                        select(Batch.status).where(Batch.batch_id == "b-expected")
                    )
                return row == "processing" and worker.snapshot().order_id_reservations == 1

            assert wait_until(prepared, timeout=10)
            assert worker.snapshot().chunks_applied == 0  # no result was sent
    finally:
        engine.dispose()


class SlowToSubscribeBus(EmbeddedTriggerBus):
    """An embedded bus whose subscriptions take a while to open, as over a network."""

    def subscribe(self, spec: SubscriptionSpec) -> EmbeddedSubscription:
        time.sleep(0.5)
        return super().subscribe(spec)


def test_the_controller_hears_a_trigger_published_right_after_its_start(
    settings: Settings, storage: StorageAccount, tmp_path: Path
) -> None:
    # start() returns once its subscription is open: a trigger published before then would
    # reach nobody, and the batch's results would wait out the back-off.
    bus = SlowToSubscribeBus(tmp_path / "bus", settings.trigger_topic)
    with controller_on(bus, settings, storage) as worker:
        batch = publish_batch(storage, settings, "b-early", make_transactions(20), chunk_size=20)
        publish_trigger(bus, storage, batch)
        assert wait_until(lambda: worker.snapshot().order_id_reservations == 1, timeout=10)


def test_the_controller_looks_again_sooner_than_the_shared_back_off(settings: Settings) -> None:
    # A batch's first results come a fraction of a second after its trigger: the
    # controller's every sleep, until the cap, is shorter than the one the other
    # listeners take after as many empty receives.
    default_cap = Settings.model_fields["backoff_max_idle_ms"].default
    settings = settings.model_copy(update={"backoff_max_idle_ms": default_cap})
    controller = controller_listener_config(settings)
    shared = listener_config(settings)
    assert controller.backoff_max_idle == shared.backoff_max_idle
    controller_curve = Backoff(
        controller.backoff_min_idle, controller.backoff_delta, controller.backoff_max_idle
    )
    shared_curve = Backoff(shared.backoff_min_idle, shared.backoff_delta, shared.backoff_max_idle)
    for empty_receives in range(8):
        assert controller_curve.bounds(empty_receives)[1] < shared_curve.bounds(empty_receives)[0]


def test_the_controllers_back_off_is_its_settings(settings: Settings) -> None:
    tuned = settings.model_copy(
        update={
            "controller_backoff_min_idle_ms": 150,
            "controller_backoff_delta_ms": 30,
            "controller_wake_hold_ms": 2500,
        }
    )
    config = controller_listener_config(tuned)
    assert (config.backoff_min_idle, config.backoff_delta) == (0.15, 0.03)
    assert config.wake_hold == 2.5


def test_only_the_controller_holds_its_back_off_after_a_trigger(settings: Settings) -> None:
    # Its results follow the trigger; the processors' work comes with it.
    assert controller_listener_config(settings).wake_hold > 0
    assert listener_config(settings).wake_hold == 0


def test_after_a_trigger_the_controller_asks_the_output_queue_every_min_idle(
    settings: Settings,
) -> None:
    # The controller's own listener settings on an empty queue: after the trigger every
    # round must reach the queue (no per-queue skip) and none may sleep longer than the
    # first step of the back-off, so a result that lands is taken within ~50 ms.
    default_cap = Settings.model_fields["backoff_max_idle_ms"].default
    config = controller_listener_config(
        settings.model_copy(update={"backoff_max_idle_ms": default_cap})
    )
    queues = MemoryQueues()
    (source,) = make_sources(queues)
    queue = memq(source)
    listener = QueueListener([source], lambda lease: None, config, trigger_available=True)
    listener.start(threads=1)
    try:
        assert wait_until(lambda: queue.calls["receive"] >= 1)
        listener.on_work_detected()
        before = queue.calls["receive"]
        time.sleep(0.9)  # within the hold (1 s)
        looked = queue.calls["receive"] - before
    finally:
        listener.stop(5)
    # every 50 ms for 0.9 s is 18 receives; growing (0.05, 0.07, 0.11, 0.19, 0.35 s…) or
    # skipped by the empty memory (0.1, 0.2, 0.4 s…) it is at most 6
    assert looked >= 10, f"{looked} receives of the output queue in 0.9 s after a trigger"
