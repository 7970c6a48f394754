"""Crash points of publishing, injected through the publisher's fault hook.

A crash (a ``BaseException`` from the hook: nothing more runs, as when the process dies)
before the record is ``accepted`` must leave a batch that processors do not rate (they
wait, then drop its items) and that the sweeper removes completely. A crash after it must
leave an accepted batch whose every work item is on the queues. A *failure* (an
``Exception``: the publisher is still alive) makes the publisher clean up by itself.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from azure.core.exceptions import ServiceResponseError

from initiator.acceptance import BatchRequest
from initiator.dependencies import Services
from initiator.idempotency import IDEMPOTENCY_PARTITION, IdempotencyInProgressError
from initiator.publishing import STEPS, FaultHook, sweep_orphans
from initiator.publishing import publisher as publisher_module
from shared import meter
from shared.contracts.batch_records import BATCH_PARTITION
from shared.contracts.batch_status import BatchStatus
from shared.settings import Settings
from tests.api.batch_files import csv_file, rows
from tests.api.conftest import ServicesFactory, SettingsFactory
from tests.api.harness import AUTH, started_api

BODY = csv_file(rows(45))  # five chunks
CHUNKS = 5
COMMIT_POINT = STEPS.index("record_accepted")


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    """Both duplicate checks on, so that every step of :data:`STEPS` runs."""
    return make_settings(duplicate_body_window_seconds=86_400.0, duplicate_transaction_ids=True)


class SimulatedCrashError(BaseException):
    """The process died here."""


class BytesBody:
    """A request body from bytes, for calling the acceptance without HTTP."""

    def __init__(self, data: bytes, block: int = 1000) -> None:
        self._data = data
        self._block = block
        self.bytes_read = 0
        self.sha256 = hashlib.sha256(data).hexdigest()

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self._data), self._block):
            block = self._data[start : start + self._block]
            self.bytes_read += len(block)
            yield block

    def drain(self) -> None:
        for _ in self:
            pass


def fail_at(step: str, error: BaseException, occurrence: int = 1) -> FaultHook:
    seen: Counter[str] = Counter()

    def hook(name: str) -> None:
        seen[name] += 1
        if name == step and seen[name] == occurrence:
            raise error

    return hook


def _request(key: str | None = "key-1") -> BatchRequest:
    return BatchRequest("normal", "text/csv", None, idempotency_key=key)


def _rows(services: Services, partition: str) -> list[str]:
    table = services.storage.table(services.settings.batches_table)
    return [entity.row_key for entity in table.query(partition)]


def _payload_blobs(services: Services) -> list[str]:
    container = services.storage.container(services.settings.payload_container)
    return [blob.name for blob in container.list()]


def _queued(services: Services) -> int:
    storage, settings = services.storage, services.settings
    return sum(storage.queue(name).approximate_count() for name in settings.work_queues("normal"))


def _crash(services: Services, step: str) -> str:
    """Accept ``BODY`` until the injected crash; returns the id of the half-made batch."""
    with pytest.raises(SimulatedCrashError):
        services.acceptance.accept(BytesBody(BODY), _request())
    (batch_id,) = _rows(services, BATCH_PARTITION)
    return batch_id


def _occurrence(step: str) -> int:
    return 2 if step == "work_item_sent" else 1  # crash with some items sent, not all


@pytest.mark.parametrize("step", STEPS[:COMMIT_POINT])
def test_crash_before_accepted_is_invisible_to_processors_and_swept(
    open_services_for: ServicesFactory, settings: Settings, step: str
) -> None:
    crash = fail_at(step, SimulatedCrashError(step), _occurrence(step))
    services = open_services_for(settings, crash)

    batch_id = _crash(services, step)

    found = services.records.find(batch_id)
    assert found is not None
    assert found.record.status in (BatchStatus.RECEIVING, BatchStatus.ACCEPTING)
    assert services.records.state(batch_id) == "pending"  # processors leave its items
    assert sweep_orphans(services.storage, settings, older_than=timedelta(hours=1)) == []

    assert sweep_orphans(services.storage, settings, older_than=timedelta(0)) == [batch_id]

    assert services.records.state(batch_id) == "gone"  # processors drop its items
    assert _rows(services, BATCH_PARTITION) == []
    assert _rows(services, IDEMPOTENCY_PARTITION) == []
    assert _payload_blobs(services) == []
    assert _queued(services) <= CHUNKS
    # The client's retry with the same key is a new batch, accepted in full.
    retry = open_services_for(settings).acceptance.accept(BytesBody(BODY), _request())
    assert not retry.replayed
    assert retry.record.batch_id != batch_id
    assert retry.record.status is BatchStatus.ACCEPTED


@pytest.mark.parametrize("step", STEPS[COMMIT_POINT:])
def test_crash_after_accepted_loses_nothing(
    open_services_for: ServicesFactory, settings: Settings, step: str
) -> None:
    services = open_services_for(settings, fail_at(step, SimulatedCrashError(step)))

    batch_id = _crash(services, step)

    assert services.records.state(batch_id) == "accepted"
    assert sweep_orphans(services.storage, settings, older_than=timedelta(0)) == []
    assert len(_payload_blobs(services)) == CHUNKS
    assert _queued(services) == CHUNKS
    # The client never got its 202; its retry gets the same batch, not a second one.
    retry = open_services_for(settings).acceptance.accept(BytesBody(BODY), _request())
    assert retry.replayed
    assert retry.record.batch_id == batch_id
    assert _queued(services) == CHUNKS


@pytest.mark.parametrize("step", ["payloads_written", "record_accepting", "work_item_sent"])
def test_a_failure_before_accepted_cleans_up_at_once(
    open_services_for: ServicesFactory, settings: Settings, step: str
) -> None:
    failure = RuntimeError(f"injected failure at {step}")
    services = open_services_for(settings, fail_at(step, failure, _occurrence(step)))

    with pytest.raises(RuntimeError, match="injected failure"):
        services.acceptance.accept(BytesBody(BODY), _request())

    assert _rows(services, BATCH_PARTITION) == []
    assert _rows(services, IDEMPOTENCY_PARTITION) == []
    assert _payload_blobs(services) == []
    assert _queued(services) <= CHUNKS  # items already sent name a batch that is gone


@pytest.mark.anyio
async def test_storage_failure_while_enqueueing_answers_503_and_leaves_only_dropped_items(
    settings: Settings, anyio_backend: str
) -> None:
    failure = ServiceResponseError("injected: connection reset while sending")
    async with started_api(settings, fault=fail_at("work_item_sent", failure, 2)) as api:
        response = await api.post_batch(BODY, {**AUTH, "Content-Type": "text/csv"})

        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert _rows(api.services, BATCH_PARTITION) == []
        assert _payload_blobs(api.services) == []
        assert 1 <= _queued(api.services) <= CHUNKS
        assert api.triggers(wait=0.05) == []


def test_a_long_upload_keeps_its_record_alive_for_the_sweeper(
    open_services_for: ServicesFactory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk after the first refreshes the ``receiving`` record when the heartbeat is due."""
    monkeypatch.setattr(publisher_module, "HEARTBEAT_SECONDS", 0.0)
    crash = fail_at("payloads_written", SimulatedCrashError("payloads_written"))
    services = open_services_for(settings, crash)
    before = meter.snapshot()

    batch_id = _crash(services, "payloads_written")

    writes = meter.diff(meter.snapshot(), before).get("table.write", 0)
    assert writes == CHUNKS  # the insert before chunk 0, a refresh before each later one
    found = services.records.find(batch_id)
    assert found is not None
    assert found.record.last_seen() > found.record.received_at


def _silence(services: Services, batch_id: str, seconds: float) -> None:
    """Make a record look as if its intake had not been heard of for ``seconds``."""
    found = services.records.find(batch_id)
    assert found is not None
    then = found.record.last_seen() - timedelta(seconds=seconds)
    services.records.save(found, found.record.model_copy(update={"updated_at": then}))


@pytest.mark.parametrize("step", ["idempotency_claimed", "record_accepting"])
def test_a_retry_on_the_key_of_a_dead_intake_takes_it_over_once_its_lease_lapses(
    open_services_for: ServicesFactory, settings: Settings, step: str
) -> None:
    """No lock-out: a key whose intake died is refused (409) only while its lease (the
    record, renewed by a live intake) could still be current: seconds, not the sweeper's
    minutes. The retry itself frees it, without waiting for a sweep."""
    crash = fail_at(step, SimulatedCrashError(step))
    orphan = _crash(open_services_for(settings, crash), step)
    services = open_services_for(settings)

    with pytest.raises(IdempotencyInProgressError):
        services.acceptance.accept(BytesBody(BODY), _request())
    assert settings.intake_lease_seconds * 10 <= settings.orphan_age_seconds
    _silence(services, orphan, settings.intake_lease_seconds + 1)
    retry = services.acceptance.accept(BytesBody(BODY), _request())

    assert not retry.replayed
    assert retry.record.status is BatchStatus.ACCEPTED
    assert _rows(services, BATCH_PARTITION) == [retry.record.batch_id]
    assert services.records.find(orphan) is None


def test_a_running_initiator_sweeps_orphans_without_a_restart(
    open_services_for: ServicesFactory, settings: Settings
) -> None:
    running = open_services_for(settings.model_copy(update={"orphan_sweep_seconds": 0.05}))
    crash = fail_at("record_accepting", SimulatedCrashError("record_accepting"))
    orphan = _crash(open_services_for(settings, crash), "record_accepting")
    time.sleep(0.2)  # a few sweeps: a live-looking intake is left alone
    assert running.records.find(orphan) is not None

    _silence(running, orphan, settings.orphan_age_seconds + 1)

    deadline = time.monotonic() + 30
    while running.records.find(orphan) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running.records.find(orphan) is None
    assert _rows(running, IDEMPOTENCY_PARTITION) == []
    assert _payload_blobs(running) == []
