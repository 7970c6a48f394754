"""Starting under throttling: a start-up step whose request the SDK gave up on is tried
again, and a step the role does not need to serve (the orphan sweep) is no stop at all.

Each request below fails with 503 ``ServerBusy`` as many times as the SDK retries it, plus
once: the SDK raises, and only the start-up's own retry gets the role started.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError, ServiceRequestError

from initiator.dependencies import open_services
from processor.gate_keeper import GateKeeper
from shared.bus.embedded import EmbeddedTriggerBus
from shared.coordination.gate import GATE_BLOB, set_gate
from shared.domain.pricebook import sample_pricebook
from shared.provision import (
    CONTROL_BLOBS,
    containers_for,
    ensure_resources,
    queues_for,
    tables_for,
)
from shared.settings import Settings
from shared.storage.transient import START_ATTEMPTS, is_transient, retry_transient
from tests.faults.conftest import RETRY_TOTAL, FaultyStorage
from tests.faults.scripted import status
from tests.support.deployment_settings import resource_names

#: One request the SDK gives up on: the first attempt and each of its retries answered 503.
GIVEN_UP = [status(503)] * (RETRY_TOTAL + 1)


def settings_in(folder: Path) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=folder,
        storage_retry_backoff_seconds=0.01,
        **resource_names(),  # the sweep must meet no other test's batches on Azurite
    )


def resources(settings: Settings) -> int:
    """How many create requests provisioning makes, when none fails."""
    created = len(queues_for(settings)) + len(containers_for(settings)) + len(tables_for(settings))
    return created + len(CONTROL_BLOBS)


def test_the_initiator_starts_although_its_pricebook_install_and_sweep_are_throttled(
    faulty: FaultyStorage, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_in(tmp_path)
    bus = EmbeddedTriggerBus(tmp_path / "bus", settings.trigger_topic)
    faulty.plan.next(
        *[None] * resources(settings),
        *GIVEN_UP,  # storing the sample pricebook's version: tried again
        None,  # the version, again
        None,  # the current pointer
        *GIVEN_UP * START_ATTEMPTS,  # the orphan sweep's query, every time it is tried
    )
    services = open_services(settings, connections=(faulty.account, bus))
    try:
        assert services.pricebooks.current_version() == sample_pricebook().version_hash()
        assert "the orphan sweep at start failed; the sweeper tries again" in caplog.text
    finally:
        services.close()
        bus.close()


class RecordingListener:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")


def test_a_processor_whose_gate_read_is_throttled_reads_it_again(faulty: FaultyStorage) -> None:
    settings = settings_in(Path("unused"))
    control = faulty.account.container(settings.control_container)
    ensure_resources(settings, faulty.account, None)
    set_gate(control, None, released=False)
    listener = RecordingListener()
    gate = GateKeeper(control, listener, start_retry_pause=0.01)
    faulty.plan.next(*GIVEN_UP)
    gate.start()
    try:
        assert faulty.plan.attempts == len(GIVEN_UP) + 1
        assert not gate.released  # what the flag says, read on the second try
        assert listener.calls == []  # held: the listener did not start
    finally:
        gate.stop()
        control.delete(GATE_BLOB)


def test_a_gate_that_stays_unreadable_stops_the_start(faulty: FaultyStorage) -> None:
    settings = settings_in(Path("unused"))
    control = faulty.account.container(settings.control_container)
    ensure_resources(settings, faulty.account, None)
    gate = GateKeeper(control, RecordingListener(), start_retry_pause=0.01)
    faulty.plan.next(*GIVEN_UP * START_ATTEMPTS)
    with pytest.raises(HttpResponseError) as raised:
        gate.start()
    assert raised.value.status_code == 503


def test_only_a_transient_failure_is_tried_again() -> None:
    attempts: list[int] = []

    def missing() -> None:
        attempts.append(1)
        raise ResourceNotFoundError("no such container")

    with pytest.raises(ResourceNotFoundError):
        retry_transient(missing, what="reading", pause=0)
    assert len(attempts) == 1  # a 404 says something true: raised at once
    busy = HttpResponseError("busy")
    busy.status_code = 503
    assert is_transient(busy)
    assert not is_transient(ValueError("a bug, not the storage"))


def test_a_transient_failure_is_tried_until_it_passes() -> None:
    failures = [ServiceRequestError("injected: timed out")]

    def flaky() -> str:
        if failures:
            raise failures.pop()
        return "done"

    assert retry_transient(flaky, what="creating", pause=0) == "done"
    assert failures == []
