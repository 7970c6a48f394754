"""Provisioning under faults: a failed create is tried again; an unreachable topic is no stop."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.core.exceptions import ServiceRequestError

from shared.bus.embedded import EmbeddedTriggerBus
from shared.faults.bus import FaultyTriggerBus
from shared.faults.plan import FaultPlan
from shared.faults.spec import FaultSpec
from shared.listener.heartbeat import Heartbeat
from shared.listener.state import ListenerState
from shared.provision import (
    CONTROL_BLOBS,
    containers_for,
    ensure_resources,
    queues_for,
    tables_for,
)
from shared.settings import Settings
from shared.storage.transient import START_ATTEMPTS
from tests.faults.conftest import FaultyStorage
from tests.faults.scripted import LOST, TIMEOUT
from tests.support.names import unique_name


def settings_in(folder: Path) -> Settings:
    return Settings(_env_file=None, data_dir=folder, storage_retry_backoff_seconds=0.01)  # type: ignore[call-arg]


def test_a_create_whose_answer_was_lost_or_timed_out_is_tried_again(
    faulty: FaultyStorage, tmp_path: Path
) -> None:
    settings = settings_in(tmp_path)
    before_tables = len(queues_for(settings)) + len(containers_for(settings))
    # the first table create: the table SDK retries neither, its create is a POST
    faulty.plan.next(*[None] * before_tables, LOST, TIMEOUT)
    ensure_resources(settings, faulty.account, None)
    tables_and_blobs = len(tables_for(settings)) + len(CONTROL_BLOBS)
    assert faulty.plan.attempts == before_tables + tables_and_blobs + 2
    assert set(tables_for(settings)) <= set(faulty.account.list_tables())


def test_a_create_that_keeps_failing_stops_the_start(faulty: FaultyStorage, tmp_path: Path) -> None:
    faulty.plan.next(*[TIMEOUT] * START_ATTEMPTS * 6)
    with pytest.raises(ServiceRequestError):
        ensure_resources(settings_in(tmp_path), faulty.account, None)


def test_an_unreachable_topic_does_not_stop_the_start(
    faulty: FaultyStorage, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    down = FaultyTriggerBus(
        EmbeddedTriggerBus(tmp_path / "bus", "triggers"),
        FaultPlan(FaultSpec(fail=1, statuses=(503,)), "bus"),
    )
    ensure_resources(settings_in(tmp_path), faulty.account, down)
    assert "trigger topic triggers not reachable" in caplog.text
    down.close()


def test_a_heartbeat_whose_table_create_fails_still_starts(faulty: FaultyStorage) -> None:
    table = faulty.account.table(unique_name("hb"))
    table.create()
    heartbeat = Heartbeat(table, ListenerState(), role="processor", busy_interval=0.01)
    faulty.plan.next(LOST)  # create table: a POST, not retried by the SDK
    heartbeat.start()
    heartbeat.stop()
    assert table.get("processor", heartbeat.instance_id).properties["status"] == "stopped"
