"""An outage is failures for longer than the window with no success between them."""

from __future__ import annotations

from shared.outage import OutageClock


def test_failures_become_an_outage_only_after_the_window_and_a_success_ends_it() -> None:
    now = [100.0]
    clock = OutageClock("storage", after_seconds=30.0, clock=lambda: now[0])
    assert clock.outage() is None
    clock.failed(ConnectionError("connection refused"))
    now[0] += 29.0
    clock.failed("timed out")
    assert clock.outage() is None  # weather, not an outage yet
    now[0] += 2.0
    assert clock.outage() == "storage failing for 31 s: timed out"
    clock.succeeded()
    assert clock.outage() is None
    clock.failed("again")
    now[0] += 31.0
    assert clock.outage() == "storage failing for 31 s: again"  # counted from the new failure
