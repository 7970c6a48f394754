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


def in_fresh_interpreter(probe: str, *args: str) -> str:
    """What ``probe`` prints, run with ``args`` in a new interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def collector_after(young_threshold: int) -> str:
    return in_fresh_interpreter(PROBE, str(young_threshold))


def test_it_freezes_start_up_and_raises_only_the_youngest_threshold() -> None:
    assert collector_after(100_000) == "(700, 10, 10) (100000, 10, 10) True"


def test_zero_keeps_pythons_settings() -> None:
    assert collector_after(0) == "(700, 10, 10) (700, 10, 10) False"


CYCLE_PROBE = """
import gc, sys, time, weakref
from shared.gc_tuning import collect_periodically, tune_collector
young = int(sys.argv[1])
tune_collector(young)
gc.disable()  # only the periodic collections may find the cycle


class Cycle:
    def __init__(self):
        self.me = self


cycle = weakref.ref(Cycle())
thread = collect_periodically(young, period=0.05)
deadline = time.monotonic() + float(sys.argv[2])
while cycle() is not None and time.monotonic() < deadline:
    time.sleep(0.01)
print(thread is not None and thread.daemon, cycle() is None)
"""


def periodic_collections_after(young_threshold: int, wait_seconds: float) -> str:
    """Whether a daemon thread started, and whether a cycle was freed within the wait."""
    return in_fresh_interpreter(CYCLE_PROBE, str(young_threshold), str(wait_seconds))


def test_periodic_full_collections_free_a_cycle_the_tuned_collector_would_keep() -> None:
    assert periodic_collections_after(100_000, wait_seconds=30) == "True True"


def test_no_periodic_collections_where_the_collector_keeps_pythons_settings() -> None:
    assert periodic_collections_after(0, wait_seconds=1) == "False False"


RUNTIME_PROBE = """
import sys, threading
from billing.runtime import tune_runtime
from shared.settings import Settings
tune_runtime(Settings(_env_file=None), event_loop=sys.argv[1] == "loop")
print(sorted(thread.name for thread in threading.enumerate() if thread.daemon))
"""


def daemon_threads_after_tuning(event_loop: bool) -> str:
    return in_fresh_interpreter(RUNTIME_PROBE, "loop" if event_loop else "no-loop")


def test_a_role_without_an_event_loop_collects_on_a_thread_of_its_own() -> None:
    assert daemon_threads_after_tuning(event_loop=False) == "['full-garbage-collections']"


def test_a_role_serving_http_never_collects_off_its_event_loops_thread() -> None:
    assert daemon_threads_after_tuning(event_loop=True) == "[]"
