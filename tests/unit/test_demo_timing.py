"""How the demo times a run: from the first POST to the close the controller stamped, not to
the poll that noticed it (billing.demo.scenario.seconds_to_close)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from billing.demo.scenario import RunStart, seconds_to_close

POSTED = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def closed(after: float | None) -> dict[str, object]:
    """A final status whose batch closed ``after`` seconds after :data:`POSTED`."""
    stamp = None if after is None else (POSTED + timedelta(seconds=after)).isoformat()
    return {"status": "completed", "timings": {"completed_at": stamp}}


def started(monotonic: float = 0.0) -> RunStart:
    return RunStart(monotonic=monotonic, wall=POSTED.timestamp())


def test_a_run_lasts_until_its_batch_closed() -> None:
    assert seconds_to_close(started(), [closed(2.345)]) == pytest.approx(2.345, abs=1e-6)


def test_a_stream_lasts_until_its_last_batch_closed() -> None:
    assert seconds_to_close(started(), [closed(1.5), closed(4.25), closed(3.0)]) == pytest.approx(
        4.25, abs=1e-6
    )


def test_without_a_close_stamp_the_run_lasts_until_now() -> None:
    start = RunStart.now()
    seconds = seconds_to_close(start, [closed(1.0), closed(None)])
    assert 0.0 <= seconds <= start.elapsed()
