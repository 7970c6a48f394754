"""The readings behind /metrics and the dashboard: the cache, the batch overview, the fleet.

Run on the embedded backend's real tables (no mock): the reader sees what the writers
(:class:`~shared.contracts.batch_records.BatchRecords`, the processors' heartbeat) really store.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from initiator.observability.batches import read_batch_overview
from initiator.observability.cache import TimedCache
from initiator.observability.fleet import STALE_AFTER, read_live_processors
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.listener.heartbeat import HEARTBEAT_IDLE_SECONDS
from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.ports import Table
from tests.dashboard.heartbeats import Figures, write_beat

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[EmbeddedStorageAccount]:
    account = EmbeddedStorageAccount(tmp_path / "storage")
    yield account
    account.close()


def new_table(storage: EmbeddedStorageAccount, name: str) -> Table:
    table = storage.table(name)
    table.create()
    return table


def test_cache_reads_once_per_ttl_and_keeps_the_value_after_a_failed_read() -> None:
    now = [100.0]
    reads: list[int] = []
    failing = [False]

    def read() -> int:
        if failing[0]:
            raise OSError("storage down")
        reads.append(len(reads) + 1)
        return reads[-1]

    cache = TimedCache(read, ttl=2.0, clock=lambda: now[0])
    assert [cache.get(), cache.get()] == [1, 1]
    now[0] += 1.9
    assert cache.get() == 1
    now[0] += 0.1
    assert cache.get() == 2
    now[0] += 5
    failing[0] = True
    with pytest.raises(OSError, match="storage down"):
        cache.get()
    failing[0] = False
    assert cache.get() == 3  # the failure was not cached: the next ask reads again
    assert reads == [1, 2, 3]


def record(number: int, status: BatchStatus) -> BatchRecord:
    return BatchRecord(
        batch_id=f"batch-{number:03d}",
        status=status,
        priority="normal",
        pricebook_version="v1",
        received_at=T0 + timedelta(minutes=number),
        transactions=number,
        chunks=1,
    )


def test_overview_counts_every_status_and_lists_the_newest_first(
    storage: EmbeddedStorageAccount,
) -> None:
    table = new_table(storage, "batches")
    records = BatchRecords(table)
    statuses = [BatchStatus.COMPLETED, BatchStatus.ACCEPTED, BatchStatus.FAILED]
    # Inserted out of time order, so that the order shown is the sort's, not the table's.
    for number in [*range(30, 60), *range(30)]:
        records.create(record(number, statuses[number % 3]))

    overview = read_batch_overview(table, limit=50)

    assert overview.counts == {
        BatchStatus.RECEIVING: 0,
        BatchStatus.ACCEPTING: 0,
        BatchStatus.ACCEPTED: 20,
        BatchStatus.PROCESSING: 0,
        BatchStatus.COMPLETED: 20,
        BatchStatus.FAILED: 20,
        BatchStatus.ABANDONED: 0,
    }
    assert [view.batch_id for view in overview.recent] == [
        f"batch-{number:03d}" for number in range(59, 9, -1)
    ]
    newest = overview.recent[0]
    assert (newest.status, newest.transactions) == ("failed", 59)  # 59 % 3 == 2: failed


def test_overview_of_no_batch(storage: EmbeddedStorageAccount) -> None:
    overview = read_batch_overview(new_table(storage, "batches"))
    assert overview.recent == []
    assert set(overview.counts.values()) == {0}


def test_live_processors_leave_out_stopped_and_silent_instances(
    storage: EmbeddedStorageAccount,
) -> None:
    table = new_table(storage, "heartbeats")
    now = datetime.now(UTC)
    write_beat(table, "b-busy", Figures(active_threads=4, total_threads=5, queue_depth=900))
    write_beat(table, "a-idle", Figures(active_threads=0, total_threads=1, queue_depth=0))
    write_beat(table, "c-stopped", status="stopped")
    write_beat(table, "d-silent", taken_at=now - STALE_AFTER - timedelta(seconds=1))
    write_beat(table, "e-quiet", taken_at=now - STALE_AFTER + timedelta(seconds=30))

    live = read_live_processors(table, now=now)

    assert [p.instance for p in live] == ["a-idle", "b-busy", "e-quiet"]
    busy = live[1]
    assert (busy.active_threads, busy.total_threads, busy.queue_depth) == (4, 5, 900)
    assert (busy.handled, busy.errors, busy.status) == (12, 0, "running")
    assert busy.p95_latency_ms == pytest.approx(50.0)
    assert live[2].beat_age_seconds == pytest.approx(STALE_AFTER.total_seconds() - 30, abs=1)


def test_an_idle_instance_between_two_idle_beats_is_live(
    storage: EmbeddedStorageAccount,
) -> None:
    """Idle processors beat every HEARTBEAT_IDLE_SECONDS: one late by half an interval, as
    a loaded machine may make it, still shows."""
    table = new_table(storage, "heartbeats")
    now = datetime.now(UTC)
    late = timedelta(seconds=1.5 * HEARTBEAT_IDLE_SECONDS)
    write_beat(table, "idle", taken_at=now - late)

    assert [p.instance for p in read_live_processors(table, now=now)] == ["idle"]


def test_a_beat_from_a_clock_ahead_has_no_negative_age(storage: EmbeddedStorageAccount) -> None:
    table = new_table(storage, "heartbeats")
    now = datetime.now(UTC)
    write_beat(table, "ahead", taken_at=now + timedelta(seconds=3))
    [instance] = read_live_processors(table, now=now)
    assert instance.beat_age_seconds == 0.0
