"""The pace a request body must keep: a pause of at most the idle timeout, and a minimum
average rate over the time spent waiting for the client (not the time spent parsing)."""

from __future__ import annotations

import pytest

from initiator.body_pace import BodyPace


def pace() -> BodyPace:
    return BodyPace(idle_timeout=10.0, min_bytes_per_second=1000)


def test_a_read_may_wait_one_idle_timeout() -> None:
    assert pace().next_wait() == 10.0


def test_a_steady_fast_client_always_gets_the_full_idle_timeout() -> None:
    body = pace()
    for _ in range(1000):
        body.record(waited=0.01, received=64 * 1024)
        assert body.next_wait() == 10.0


def test_a_dripping_client_runs_out_of_time_though_it_never_pauses_long() -> None:
    body = pace()
    reads = 0
    while body.next_wait() > 0:
        body.record(waited=1.0, received=10)  # 10 bytes a second, never a 10 s pause
        reads += 1
        assert reads < 100
    # 10 s of grace, then 1,000 bytes a second were due: it had sent 100 bytes in ~10 s.
    assert reads == pytest.approx(10, abs=1)


def test_time_spent_parsing_is_not_the_clients() -> None:
    body = pace()
    for _ in range(100):
        body.record(waited=0.0, received=1000)  # the data was there whenever asked for
    assert body.next_wait() == 10.0


def test_a_pause_uses_up_what_the_client_earned() -> None:
    body = pace()
    body.record(waited=1.0, received=5000)  # earned 5 s beyond the grace
    assert body.next_wait() == 10.0
    body.record(waited=12.0, received=0)
    assert body.next_wait() == pytest.approx(2.0)
