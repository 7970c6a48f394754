"""``billing controller`` and ``billing processor`` answer probes on BILLING_HEALTH_PORT
from the probe that also gates their liveness file.

As separate processes, as Container Apps runs them: ``/healthz`` says ``starting`` while a
role waits for its dependencies (no liveness file yet), ``ok`` once it runs (the file is
touched), ``503`` and the reason once every worker process of a processor has died while
the process still runs (the file is no longer touched), and ``ok`` again once they are
restarted. The controller's listener stopping is shown on a real controller in this
process: outside a shutdown nothing else stops it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from billing.controller_process import listener_probe
from billing.demo.cluster import free_port
from billing.deployment import Deployment as InProcessDeployment
from shared.health_endpoint import HealthEndpoint
from shared.liveness import LivenessFile
from shared.role_health import RoleHealth
from shared.settings import Settings
from shared.storage import open_storage
from tests.e2e.test_roles import Deployment, RoleProcess, role
from tests.support.deployment_settings import (
    billing_environment,
    deployment_values,
    settings_factory,
)

LIVENESS_INTERVAL_SECONDS = 0.1


def probed_deployment(folder: Path, **values: Any) -> Deployment:
    """A deployment on the embedded backend whose workers answer probes and keep a
    liveness file; ``values`` override its settings."""
    settings = deployment_values(
        folder,
        partitions=1,
        health_port=free_port(),
        liveness_file=folder / "alive",
        liveness_interval_seconds=LIVENESS_INTERVAL_SECONDS,
        **values,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= billing_environment(settings) | {"BILLING_HOST": "127.0.0.1"}
    return Deployment(env=env, settings=settings_factory(settings)(), folder=folder)


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    return probed_deployment(tmp_path)


def healthz(settings: Settings) -> tuple[int, str] | None:
    """``GET /healthz`` on the worker's health port: (status, body), or None: no answer."""
    try:
        response = httpx.get(f"http://127.0.0.1:{settings.health_port}/healthz", timeout=1)
    except httpx.TransportError:
        return None
    return response.status_code, response.text


def touched_at(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None


def processor_pids(settings: Settings) -> set[int]:
    """The pids of the worker processes whose heartbeat says running."""
    storage = open_storage(settings)
    try:
        if settings.heartbeats_table not in storage.list_tables():
            return set()
        rows = storage.table(settings.heartbeats_table).query("processor")
        return {int(r.properties["pid"]) for r in rows if r.properties["status"] == "running"}
    finally:
        storage.close()


def wait_well(running: RoleProcess, settings: Settings) -> None:
    """``/healthz`` says ok and the liveness file is fresh (touched after the ok)."""
    running.wait_until(lambda: healthz(settings) == (200, "ok\n"), "well")
    since = time.time()
    alive = settings.liveness_file
    assert alive is not None
    running.wait_until(lambda: (touched_at(alive) or 0.0) >= since, "touching its file")


@pytest.mark.parametrize("args", [["controller"], ["processor", "--processes", "1"]])
def test_a_worker_answers_health_probes_as_its_liveness_file_does(
    args: list[str], deployment: Deployment
) -> None:
    with role(deployment, *args) as running:
        wait_well(running, deployment.settings)
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(timeout=30) == 0, running.log()
    assert deployment.settings.liveness_file is not None
    assert not deployment.settings.liveness_file.exists()  # a stopped role is not alive


def test_a_processor_whose_worker_processes_died_answers_503_until_they_are_back(
    deployment: Deployment,
) -> None:
    settings = deployment.settings
    alive = settings.liveness_file
    assert alive is not None
    with role(deployment, "processor", "--processes", "1") as running:
        wait_well(running, settings)
        running.wait_until(lambda: len(processor_pids(settings)) == 1, "running")
        (worker,) = processor_pids(settings)
        os.kill(worker, signal.SIGKILL)  # the supervisor runs on, and restarts it in 1 s

        unwell = (503, "worker processes not running: processor-0\n")
        running.wait_until(lambda: healthz(settings) == unwell, "answering 503")
        time.sleep(3 * LIVENESS_INTERVAL_SECONDS)  # a touch decided before the kill lands
        last_touch = touched_at(alive)
        compared = 0
        while True:
            touched = touched_at(alive)
            answer = healthz(settings)  # dead, then restarted: one change, so 503 now
            if answer != unwell:  # means it was still dead when the file was read
                break
            assert touched == last_touch, "the file was touched while /healthz said 503"
            compared += 1
            time.sleep(LIVENESS_INTERVAL_SECONDS / 2)
        assert compared, "restarted before the file could be compared"
        assert answer == (200, "ok\n"), running.log()
        running.wait_until(lambda: (touched_at(alive) or 0.0) > (last_touch or 0.0), "touched")
        running.process.send_signal(signal.SIGTERM)
        assert running.process.wait(timeout=30) == 0, running.log()
    assert "restarting in 1 s" in running.log()


def test_a_worker_waiting_for_its_dependencies_answers_starting(tmp_path: Path) -> None:
    """Not 503 and not silence: Azure's liveness probe would restart it into the same wait."""
    nowhere = f"postgresql+psycopg://billing:billing@127.0.0.1:{free_port()}/billing"
    waiting = probed_deployment(tmp_path, warehouse_url=nowhere)
    with role(waiting, "controller") as running:
        running.wait_until(lambda: "waiting for" in running.log(), "waiting")
        assert healthz(waiting.settings) == (200, "starting\n")
        time.sleep(3 * LIVENESS_INTERVAL_SECONDS)
        assert not (tmp_path / "alive").exists()  # compose's check waits for the role
        assert running.process.poll() is None, running.log()


@pytest.fixture
def controller_health(tmp_path: Path) -> Iterator[tuple[InProcessDeployment, RoleHealth, int]]:
    settings = settings_factory(deployment_values(tmp_path, partitions=1))()
    health = RoleHealth()
    port = free_port()
    with InProcessDeployment(settings) as deployment, HealthEndpoint(port, health, "127.0.0.1"):
        yield deployment, health, port


def test_a_controller_whose_listener_stopped_answers_503(
    controller_health: tuple[InProcessDeployment, RoleHealth, int], tmp_path: Path
) -> None:
    deployment, health, port = controller_health
    worker = deployment.start(deployment.controller())
    health.register(listener_probe(worker))  # as billing controller does once it listens
    alive = tmp_path / "alive"
    liveness = LivenessFile(alive, health, interval=LIVENESS_INTERVAL_SECONDS)
    liveness.start()
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        well = httpx.get(url, timeout=5)
        assert (well.status_code, well.text) == (200, "ok\n")
        deadline = time.monotonic() + 10
        while not alive.exists():
            assert time.monotonic() < deadline, "never touched"
            time.sleep(0.02)
        worker.stop(1.0)  # the listener stops; this process, and its endpoint, run on
        unwell = httpx.get(url, timeout=5)
        time.sleep(3 * LIVENESS_INTERVAL_SECONDS)
        last_touch = alive.stat().st_mtime
        time.sleep(3 * LIVENESS_INTERVAL_SECONDS)
        assert alive.stat().st_mtime == last_touch  # the file agrees
    finally:
        liveness.stop()
    assert (unwell.status_code, unwell.text) == (503, "the controller's listener is not running\n")
