"""The rates the sampler computes, and the ring that keeps its samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from initiator.observability.fleet import ProcessorInstance
from initiator.observability.history import HistoryRing, Sample
from initiator.observability.rates import (
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


def test_rated_rate_is_what_the_beats_added_since_the_previous_sample() -> None:
    rate = RatedRate()
    assert rate.update([beat("a", 0, 700)], T0) == 0  # the first reading is the baseline
    # The same beat read again (no new heartbeat) is no rating.
    assert rate.update([beat("a", 0, 700)], T0 + timedelta(seconds=2)) == 0
    # A beat with 1,000 more, read 2 s after the previous sample: 500 a second, at once.
    assert rate.update([beat("a", 3, 1700)], T0 + timedelta(seconds=4)) == 500
    # b started since the previous sample: all of its count is new.
    both = [beat("a", 5, 2700), beat("b", 5, 300)]
    assert rate.update(both, T0 + timedelta(seconds=6)) == (1000 + 300) / 2
    # A restarted instance counts from zero again, never as a negative rate.
    both = [beat("a", 7, 200), beat("b", 7, 700)]
    assert rate.update(both, T0 + timedelta(seconds=8)) == (200 + 400) / 2


def test_the_rate_falls_to_zero_in_the_first_sample_after_the_rating_stops() -> None:
    rate = RatedRate()
    rate.update([beat("a", 0, 0)], T0)
    # 30,000 rated between beats 10 s apart, seen by a sample 2 s after the previous one:
    # shown then, not repeated for the 10 s the beats were apart.
    assert rate.update([beat("a", 10, 30_000)], T0 + timedelta(seconds=2)) == 15_000
    assert rate.update([beat("a", 10, 30_000)], T0 + timedelta(seconds=4)) == 0


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
