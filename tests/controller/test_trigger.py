"""The controller hears the trigger topic: an accepted batch wakes its sleeping listener."""

from __future__ import annotations

import time
from pathlib import Path

from controller.worker import ControllerWorker
from shared.bus.embedded import EmbeddedTriggerBus
from shared.contracts.messages import KIND_PROPERTY, PRIORITY_PROPERTY, TriggerEvent
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.conftest import wait_until_closed


def test_a_trigger_wakes_the_controller_out_of_its_back_off(
    settings: Settings, storage: StorageAccount, tmp_path: Path
) -> None:
    bus = EmbeddedTriggerBus(tmp_path / "bus", settings.trigger_topic)
    bus.ensure_topic()
    # After its first empty receive the controller's only thread sleeps at least 30 s.
    config = listener_config(
        settings, backoff_min_idle=30.0, backoff_max_idle=60.0, scaling_rule="0:1"
    )
    worker = ControllerWorker(settings, storage, listener_config=config, bus=bus)
    worker.start()
    try:
        time.sleep(0.5)  # it has found the output queue empty and gone to sleep
        batch = publish_batch(storage, settings, "b-woken", make_transactions(40), chunk_size=20)
        output = storage.queue(settings.output_queue)
        for message in batch.results:
            output.send(message.to_text())
        event = TriggerEvent(
            storage_account=storage.account_name,
            queue_names=["work-normal-0"],
            payload_size=0,
            batch_id=batch.batch_id,
            priority="normal",
            chunk_count=len(batch.chunks),
        )
        bus.publish(event.to_text().encode(), {PRIORITY_PROPERTY: "normal", KIND_PROPERTY: "work"})

        record = wait_until_closed(storage, settings, batch.batch_id, timeout=10)
        assert record.reconciled is True
    finally:
        worker.stop(5)
        bus.close()
