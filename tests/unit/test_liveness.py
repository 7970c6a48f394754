"""The liveness file and ``billing-healthcheck``: what container health checks rely on.

The file and ``GET /healthz`` read one :class:`~shared.role_health.RoleHealth`, so they
agree: touched exactly while the endpoint answers ``200 ok``."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from billing.demo.cluster import free_port
from billing.healthcheck import main
from shared.health_endpoint import HealthEndpoint
from shared.liveness import LivenessFile, age_seconds
from shared.role_health import RoleHealth


def _wait_until(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_touched_while_healthz_says_ok_and_removed_at_stop(tmp_path: Path) -> None:
    path = tmp_path / "alive"
    port = free_port()
    health = RoleHealth()
    healthy = threading.Event()
    liveness = LivenessFile(path, health, interval=0.05)
    liveness.start()

    def healthz() -> tuple[int, str]:
        response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        return response.status_code, response.text

    try:
        with HealthEndpoint(port, health, host="127.0.0.1"):
            time.sleep(0.2)
            assert healthz() == (200, "starting\n")
            assert not path.exists()  # starting is not well: compose waits for the file
            health.register(lambda: None if healthy.is_set() else "a worker died")
            healthy.set()
            assert _wait_until(path.exists)
            assert healthz() == (200, "ok\n")
            healthy.clear()  # the role is unwell: the file ages while /healthz says why
            assert healthz() == (503, "a worker died\n")
            time.sleep(0.1)
            first = path.stat().st_mtime
            time.sleep(0.2)
            assert path.stat().st_mtime == first
            healthy.set()
            assert _wait_until(lambda: path.stat().st_mtime > first)
            assert healthz() == (200, "ok\n")
            health.withdraw()
            assert healthz() == (503, "stopping\n")
            time.sleep(0.1)
            last = path.stat().st_mtime
            time.sleep(0.2)
            assert path.stat().st_mtime == last
    finally:
        liveness.stop()
    assert not path.exists()
    assert age_seconds(path) is None


def test_a_probe_that_raises_counts_as_unhealthy(tmp_path: Path) -> None:
    path = tmp_path / "alive"

    def probe() -> str | None:
        raise RuntimeError("broken")

    health = RoleHealth()
    health.register(probe)
    liveness = LivenessFile(path, health, interval=0.05)
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
