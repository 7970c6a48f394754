"""How many intake helper processes an initiator starts, and what their warm-up says when
it fails (initiator.intake_helpers)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from initiator import intake_helpers
from initiator.intake_helpers import IntakeHelpers, available_cores, helper_count
from tests.listener.helpers import wait_until

CORES = len(os.sched_getaffinity(0))


def quota(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    return path


def test_a_setting_of_one_means_none_and_more_means_that_many(tmp_path: Path) -> None:
    unlimited = quota(tmp_path, "max 100000\n")
    assert helper_count(1, cpu_max=unlimited) == 0
    assert helper_count(3, cpu_max=unlimited) == 3


def test_a_container_limited_to_half_a_core_starts_none(tmp_path: Path) -> None:
    assert available_cores(quota(tmp_path, "50000 100000\n")) == 1
    assert helper_count(0, cpu_max=quota(tmp_path, "50000 100000\n")) == 0


@pytest.mark.skipif(CORES < 2, reason="needs two cores to be allowed two")
def test_a_quota_of_two_cores_allows_two(tmp_path: Path) -> None:
    assert available_cores(quota(tmp_path, "200000 100000\n")) == 2
    assert helper_count(0, cpu_max=quota(tmp_path, "200000 100000\n")) == 2


def test_without_a_quota_every_core_counts(tmp_path: Path) -> None:
    assert available_cores(quota(tmp_path, "max 100000\n")) == CORES
    assert available_cores(tmp_path / "absent") == CORES
    assert helper_count(0, cpu_max=tmp_path / "absent") == (CORES if CORES >= 2 else 0)


@pytest.mark.parametrize(
    ("module", "said", "not_said"),
    [
        ("tests.support.dies_on_import", "died while starting", "could not import"),
        ("tests.support.no_such_module", "could not import tests.support.no_such_module", "died"),
    ],
)
def test_a_failed_warm_up_says_whether_the_helper_died_or_could_not_import(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    module: str,
    said: str,
    not_said: str,
) -> None:
    monkeypatch.setattr(intake_helpers, "HELPER_MODULE", module)
    helpers = IntakeHelpers(1, gc_young_threshold=700)
    try:
        with caplog.at_level(logging.WARNING, logger="initiator"):
            helpers.start()
            assert wait_until(lambda: "intake helper" in caplog.text, timeout=60)
    finally:
        helpers.close()
    assert said in caplog.text
    assert not_said not in caplog.text


#: A parent that starts two helpers, says so, and waits to be killed.
PARENT = """
import sys, time
from initiator.intake_helpers import IntakeHelpers
helpers = IntakeHelpers(2, gc_young_threshold=700)
helpers.start()
print("started", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_helpers_exit_when_their_parent_dies_without_closing_them(how: signal.Signals) -> None:
    """A parent killed (or dying by a signal's default action, as uvicorn's re-raised
    SIGTERM would) never shuts the pool down; its helpers must not live on, orphaned."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == "started\n"
        process = psutil.Process(parent.pid)
        assert wait_until(lambda: len(helper_processes(process)) == 2, timeout=60)
        helpers = helper_processes(process)
        parent.send_signal(how)
        assert parent.wait(timeout=30) == -how
        _gone, alive = psutil.wait_procs(helpers, timeout=30)
        assert not alive, [p.cmdline() for p in alive]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def helper_processes(parent: psutil.Process) -> list[psutil.Process]:
    """The parent's pool workers (not multiprocessing's resource tracker)."""
    return [child for child in parent.children() if "spawn_main" in " ".join(child.cmdline())]
