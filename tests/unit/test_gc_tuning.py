"""``tune_collector``: a role process's garbage-collector settings, and the way to opt out.

Each case runs in a fresh interpreter, so the test process keeps Python's settings.
"""

from __future__ import annotations

import subprocess
import sys

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
