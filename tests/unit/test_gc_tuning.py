"""``tune_collector``: a role process's garbage-collector settings, and the way to opt out.

Each case runs in a fresh interpreter, so the test process keeps Python's settings.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

from shared.gc_tuning import FullCollections

PROBE = """
import gc, sys
from shared.gc_tuning import tune_collector
before = gc.get_threshold()
tune_collector(int(sys.argv[1]))
print(before, gc.get_threshold(), gc.get_freeze_count() > 0)
"""


def collector_after(young_threshold: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(young_threshold)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def test_it_freezes_start_up_and_raises_only_the_youngest_threshold() -> None:
    assert collector_after(100_000) == "(700, 10, 10) (100000, 10, 10) True"


def test_zero_keeps_pythons_settings() -> None:
    assert collector_after(0) == "(700, 10, 10) (700, 10, 10) False"


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_full_collections_collect_once_a_period_has_passed() -> None:
    now = [0.0]
    collections = FullCollections(100_000, period=10.0, clock=lambda: now[0])
    was_enabled = gc.isenabled()
    gc.disable()  # only the ticks may collect the cycle
    try:
        cycle = weakref.ref(_Cycle())
        now[0] = 9.9
        assert collections.tick() is None
        assert cycle() is not None
        now[0] = 10.0
        found = collections.tick()
        assert cycle() is None
        assert found is not None
        assert found >= 1
        now[0] = 15.0
        assert collections.tick() is None  # the next period starts at the collection
    finally:
        if was_enabled:
            gc.enable()


def test_full_collections_do_nothing_where_the_collector_keeps_pythons_settings() -> None:
    now = [0.0]
    collections = FullCollections(0, period=10.0, clock=lambda: now[0])
    now[0] = 100.0
    assert collections.tick() is None
