"""An idle processor: one work-signal read per safety tick, no depth scan, no 404.

The safety tick here is 0.2 s instead of the default 120 s; the quiet rescan keeps its
default (an hour), so only the work signal can make an idle instance look at its queues.
"""

from __future__ import annotations

import time
from pathlib import Path

from azure.core.exceptions import ResourceNotFoundError

from shared import meter
from shared.coordination.gate import GATE_BLOB, GateWatcher
from shared.coordination.work_signal import WORK_SIGNAL_BLOB, work_signal_version
from shared.storage.embedded import EmbeddedStorageAccount
from tests.processor.conftest import WorkerStarter
from tests.processor.deployment import Deployment, wait_until
from tests.processor.reference import TIE_BOOK
from tests.processor.test_trigger import LosingBus

TICK = 0.2


def storage_requests_during(seconds: float) -> dict[str, int]:
    """This process's storage requests (bus receives left out) during ``seconds``."""
    before = meter.snapshot()
    time.sleep(seconds)
    counted = meter.diff(meter.snapshot(), before)
    return {kind: n for kind, n in counted.items() if not kind.startswith("bus.")}


def test_an_idle_processor_reads_only_the_work_signal(
    deployment: Deployment, start_worker: WorkerStarter
) -> None:
    worker = start_worker(deployment, safety_poll_seconds=TICK, heartbeat_idle_seconds=600)
    assert wait_until(lambda: worker.snapshot().listener.safety_poll_only)

    idle = storage_requests_during(10 * TICK)

    # No depth scan of its 6 queues, no gate read (so no 404 either): one HEAD a tick,
    # besides the heartbeat (written once more as the last thread retired).
    assert set(idle) <= {"blob.head", "table.write"}, idle
    assert 5 <= idle["blob.head"] <= 11


def test_a_lost_trigger_is_found_through_the_work_signal(
    deployment: Deployment, start_worker: WorkerStarter
) -> None:
    version = deployment.upload_pricebook(TIE_BOOK)
    worker = start_worker(deployment, safety_poll_seconds=TICK)
    assert wait_until(lambda: worker.snapshot().listener.safety_poll_only)
    losing = LosingBus(deployment.settings.trigger_topic)

    batch_id = deployment.publish(
        [[("bob", "TIE", 1, "EU")]], pricebook_version=version, bus=losing
    )

    assert losing.lost == 1
    # Within a tick or two, not the hour of the quiet rescan.
    assert wait_until(lambda: len(deployment.results()) == 1, timeout=10)
    assert deployment.results()[0].batch_id == batch_id


def test_provisioning_writes_the_gate_and_the_work_signal(deployment: Deployment) -> None:
    control = deployment.storage.container(deployment.settings.control_container)
    assert control.head(GATE_BLOB).etag
    assert control.head(WORK_SIGNAL_BLOB).etag


def test_undeclared_control_blobs_are_created_once_then_read_without_404(
    tmp_path: Path,
) -> None:
    """A deployment whose resources are declared elsewhere (no provisioning): the first
    reader creates the gate (released) and the signal; later reads find them."""
    account = EmbeddedStorageAccount(tmp_path)
    try:
        control = account.container("control")
        control.create()
        gate = GateWatcher(control)
        first = work_signal_version(control)
        assert gate.released
        before = meter.snapshot()
        assert gate.refresh()
        assert work_signal_version(control) == first
        assert meter.diff(meter.snapshot(), before) == {"blob.get": 1, "blob.head": 1}
        control.get(GATE_BLOB)  # would raise ResourceNotFoundError had nothing been written
    except ResourceNotFoundError as exc:  # pragma: no cover - the failure being tested
        raise AssertionError(f"a control blob is still missing: {exc}") from exc
    finally:
        account.close()
