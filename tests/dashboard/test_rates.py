"""The rates the sampler computes, and the ring that keeps its samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from initiator.observability.fleet import ProcessorInstance
from initiator.observability.history import HistoryRing, Sample
from initiator.observability.rates import (
    RATE_FRESH_FOR,
    AppliedRate,
    RatedRate,
    RequestRate,
    no_prices,
)
from initiator.schemas import BatchStatusView
from shared.contracts.batch_records import BatchRecord
from shared.contracts.batch_status import BatchStatus

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def beat(instance: str, seconds: float, rated: int) -> ProcessorInstance:
    return ProcessorInstance(
        instance=instance,
        status="running",
        taken_at=T0 + timedelta(seconds=seconds),
        rated_transactions=rated,
    )


def test_rated_rate_is_the_change_between_an_instances_last_two_beats() -> None:
    rate = RatedRate()
    assert rate.update([beat("a", 0, 0)], T0) == 0  # one beat: no rate yet
    # The same beat read again (no new heartbeat) changes nothing.
    assert rate.update([beat("a", 0, 0)], T0 + timedelta(seconds=2)) == 0
    assert rate.update([beat("a", 10, 5000)], T0 + timedelta(seconds=11)) == 500
    assert rate.update([beat("a", 10, 5000)], T0 + timedelta(seconds=13)) == 500
    both = [beat("a", 10, 5000), beat("b", 12, 100)]
    assert rate.update(both, T0 + timedelta(seconds=14)) == 500  # b's first beat
    both = [beat("a", 20, 8000), beat("b", 22, 2100)]
    assert rate.update(both, T0 + timedelta(seconds=23)) == 300 + 200
    # A beat older than RATE_FRESH_FOR says nothing about now.
    later = T0 + timedelta(seconds=22) + RATE_FRESH_FOR + timedelta(seconds=1)
    assert rate.update(both, later) == 0


def test_a_rate_is_shown_for_as_long_as_the_interval_it_was_measured_over() -> None:
    rate = RatedRate()
    rate.update([beat("a", 0, 0)], T0)
    # 3,000 transactions rated between beats 3 s apart: 1,000 a second, for 3 s after.
    assert rate.update([beat("a", 3, 3000)], T0 + timedelta(seconds=4)) == 1000
    assert rate.update([beat("a", 3, 3000)], T0 + timedelta(seconds=6)) == 1000
    assert rate.update([beat("a", 3, 3000)], T0 + timedelta(seconds=6.5)) == 0


def view(batch_id: str, transactions: int, chunks: int, applied: int) -> BatchStatusView:
    return BatchStatusView.of(
        BatchRecord(
            batch_id=batch_id,
            status=BatchStatus.PROCESSING,
            priority="normal",
            pricebook_version="v1",
            received_at=T0,
            transactions=transactions,
            chunks=chunks,
            chunks_applied=applied,
        )
    )


def test_applied_rate_counts_what_each_batch_applied_since_the_last_reading() -> None:
    rate = AppliedRate()
    assert rate.update([view("x", 1000, 10, 2)], T0) == 0  # the first reading is the baseline
    two_seconds = T0 + timedelta(seconds=2)
    # x: 200 → 600 applied; y is new: all its 50 applied count.
    assert rate.update([view("x", 1000, 10, 6), view("y", 100, 2, 1)], two_seconds) == 225
    # A batch falling off the recent list is no negative rate.
    assert rate.update([view("y", 100, 2, 1)], two_seconds + timedelta(seconds=1)) == 0


def test_applied_rate_keeps_its_value_while_the_reading_is_the_cached_one() -> None:
    rate = AppliedRate()
    rate.update([view("x", 1000, 10, 0)], T0)
    reading = [view("x", 1000, 10, 5)]
    assert rate.update(reading, T0 + timedelta(seconds=2)) == 250
    # The same list again: the cache was not re-read; the rate is not a zero.
    assert rate.update(reading, T0 + timedelta(seconds=3)) == 250
    # The next reading measures from the one before it, over the 2 s between them.
    assert rate.update([view("x", 1000, 10, 7)], T0 + timedelta(seconds=4)) == 100


def test_request_rate_sums_processes_over_the_last_minute() -> None:
    rate = RequestRate()
    me, other = ("host", 1), ("host", 2)
    assert rate.update({me: {"queue.get": 10}}, T0) == {}
    after_30s = T0 + timedelta(seconds=30)
    counts = {me: {"queue.get": 40}, other: {"queue.get": 500, "blob.put": 3}}
    # 30 more gets from me in 30 s: 60 a minute; the other process's first reading is its baseline.
    assert rate.update(counts, after_30s) == {"queue.get": 60.0}
    after_60s = T0 + timedelta(seconds=60)
    counts = {me: {"queue.get": 70}, other: {"queue.get": 530, "blob.put": 9}}
    assert rate.update(counts, after_60s) == {"queue.get": 90.0, "blob.put": 6.0}
    after_90s = T0 + timedelta(seconds=90)
    # The other process restarted (its counts fell): what it shows now is new. The steps
    # that ended a minute ago or more have left the window.
    counts = {me: {"queue.get": 70}, other: {"queue.get": 4}}
    assert rate.update(counts, after_90s) == {"queue.get": 60.0 + 4, "blob.put": 6.0}


def test_there_is_no_cost_until_prices_exist() -> None:
    assert no_prices({"queue.get": 100.0}) is None


def sample(seq: int) -> Sample:
    return Sample(
        seq=seq,
        taken_at=T0 + timedelta(seconds=seq),
        queue_depths={},
        processors=[],
        rated_per_second=0,
        applied_per_second=0,
        requests_per_minute={},
    )


def test_the_ring_keeps_the_newest_samples_and_serves_those_after_a_seq() -> None:
    ring = HistoryRing(capacity=3)
    assert ring.latest() is None
    for seq in range(1, 6):
        ring.append(sample(seq))
    assert len(ring) == 3
    assert [s.seq for s in ring.after(0)] == [3, 4, 5]
    assert [s.seq for s in ring.after(4)] == [5]
    assert ring.after(5) == []
    assert ring.latest() == sample(5)
    with pytest.raises(ValueError, match="out of order"):
        ring.append(sample(9))
