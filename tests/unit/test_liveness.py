"""The liveness file and ``billing-healthcheck``: what container health checks rely on."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from billing.healthcheck import main
from shared.liveness import LivenessFile, age_seconds


def _wait_until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_touched_while_the_probe_holds_and_removed_at_stop(tmp_path: Path) -> None:
    path = tmp_path / "alive"
    healthy = threading.Event()
    healthy.set()
    liveness = LivenessFile(path, healthy.is_set, interval=0.05)
    liveness.start()
    try:
        assert _wait_until(path.exists)
        healthy.clear()  # the role is unwell: the file ages
        time.sleep(0.1)
        first = path.stat().st_mtime
        time.sleep(0.2)
        assert path.stat().st_mtime == first
        healthy.set()
        assert _wait_until(lambda: path.stat().st_mtime > first)
    finally:
        liveness.stop()
    assert not path.exists()
    assert age_seconds(path) is None


def test_a_probe_that_raises_counts_as_unhealthy(tmp_path: Path) -> None:
    path = tmp_path / "alive"

    def probe() -> bool:
        raise RuntimeError("broken")

    liveness = LivenessFile(path, probe, interval=0.05)
    liveness.start()
    time.sleep(0.2)
    liveness.stop()
    assert not path.exists()


@pytest.fixture
def alive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    monkeypatch.setenv("BILLING_LIVENESS_FILE", str(tmp_path / "alive"))
    monkeypatch.setenv("BILLING_LIVENESS_INTERVAL_SECONDS", "10")
    monkeypatch.setenv("BILLING_PORT", "9")  # nothing answers /healthz there
    return tmp_path / "alive"


def test_healthcheck_passes_on_a_fresh_file(alive: Path) -> None:
    alive.touch()
    main([])  # returns: exit status 0


def test_healthcheck_fails_on_a_stale_file(alive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alive.touch()
    old = time.time() - 31  # three missed 10 s touches
    os.utime(alive, (old, old))
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 1
    assert "not touched for 31 s" in capsys.readouterr().err


def test_healthcheck_without_a_file_asks_the_initiator(
    alive: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([])
    assert "unhealthy: URLError" in capsys.readouterr().err
