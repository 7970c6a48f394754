"""The role commands as an operator runs them: start, become ready, stop on SIGTERM.

``billing initiator``, ``billing processor --processes 1`` and ``billing controller`` start
as processes of one deployment, on the embedded backend and on Azurite (connection string in
the environment); each creates what it needs and becomes ready (the initiator answers
``/healthz``, the processor's heartbeat says running, the controller logs that it listens),
and each exits cleanly within :data:`STOP_BOUND_SECONDS` of SIGTERM — the grace a container
platform gives before SIGKILL, taking its child processes with it (the processor's workers,
the initiator's intake helpers). The measured stop times are printed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from billing.demo.cluster import free_port
from initiator.intake_helpers import helper_count
from shared.provision import containers_for, queues_for, tables_for
from shared.settings import Settings
from shared.storage import open_storage
from tests.support.deployment_settings import (
    azurite_connection_string,
    billing_environment,
    deployment_values,
    settings_factory,
)

STOP_BOUND_SECONDS = 5.0
READY_TIMEOUT_SECONDS = 60.0
BILLING = Path(sys.executable).with_name("billing")  # the console script


@dataclass
class Deployment:
    """What a role process is told (its environment) and the same as test-side settings."""

    env: dict[str, str]
    settings: Settings
    folder: Path


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Deployment:
    values = deployment_values(
        tmp_path,
        connection_string=azurite_connection_string(request, request.param == "azurite"),
        partitions=1,  # fewer queues to create: a quicker start on Azurite
        api_keys="roles-test-key",
        port=free_port(),
    )
    # Nothing from the test run's own environment leaks in (BILLING_* of a developer shell).
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= billing_environment(values)
    settings = settings_factory(values)()
    return Deployment(env=env, settings=settings, folder=tmp_path)


class RoleProcess:
    """A ``billing <role>`` process whose output goes to a log file."""

    def __init__(self, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.process = process
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while not condition():
            assert self.process.poll() is None, f"exited {self.process.returncode}:\n{self.log()}"
            assert time.monotonic() < deadline, f"not {what} in time:\n{self.log()[-3000:]}"
            time.sleep(0.05)


def terminate_all(processes: dict[str, RoleProcess]) -> dict[str, tuple[int, float]]:
    """SIGTERM every process at once, then wait for each in turn: name → (exit code, seconds
    from its signal to its exit as seen here, an upper bound)."""
    sent = {}
    for name, running in processes.items():
        sent[name] = time.monotonic()
        running.process.send_signal(signal.SIGTERM)
    stops = {}
    for name, running in processes.items():
        try:
            code = running.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name} still running 30 s after SIGTERM:\n{running.log()[-3000:]}")
        stops[name] = (code, time.monotonic() - sent[name])
    return stops


@contextmanager
def role(deployment: Deployment, *args: str) -> Iterator[RoleProcess]:
    """Start ``billing *args`` in the test's folder (no stray ``.env``); killed if left."""
    log_path = deployment.folder / f"{args[0]}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(BILLING), *args],
            cwd=deployment.folder,
            env=deployment.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        yield RoleProcess(process, log_path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def descendants(running: RoleProcess) -> list[psutil.Process]:
    """The role's processes below its own, as they are now."""
    return psutil.Process(running.process.pid).children(recursive=True)


def assert_resources_exist(settings: Settings) -> str:
    """Every queue, container and table of the deployment is there; the account's name."""
    storage = open_storage(settings)
    try:
        assert set(queues_for(settings)) <= set(storage.list_queues())
        assert set(containers_for(settings)) <= set(storage.list_containers())
        assert set(tables_for(settings)) <= set(storage.list_tables())
        return storage.account_name
    finally:
        storage.close()


def answers_healthz(url: str) -> bool:
    """The initiator at ``url`` answers ``GET /healthz`` with 200 (not yet, or no longer: False)."""
    try:
        return httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def heartbeat_statuses(settings: Settings) -> list[str]:
    storage = open_storage(settings)
    try:
        if settings.heartbeats_table not in storage.list_tables():
            return []
        table = storage.table(settings.heartbeats_table)
        return [str(entity.properties["status"]) for entity in table.query("processor")]
    finally:
        storage.close()


def test_billing_help_lists_the_roles() -> None:
    done = subprocess.run(
        [str(BILLING), "--help"], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    commands = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("│ ")}
    assert {"initiator", "processor", "controller", "demo"} <= commands, done.stdout


def test_each_role_starts_becomes_ready_and_stops_on_sigterm_within_5_s(
    deployment: Deployment,
) -> None:
    """The three roles of one deployment, side by side as separate processes (which also
    keeps the test short: they start in parallel)."""
    settings = deployment.settings
    url = f"http://127.0.0.1:{settings.port}"

    with (
        role(deployment, "initiator") as initiator,
        role(deployment, "processor", "--processes", "1") as processor,
        role(deployment, "controller") as controller,
    ):
        initiator.wait_until(lambda: answers_healthz(url), "healthy")
        processor.wait_until(lambda: heartbeat_statuses(settings) == ["running"], "running")
        controller.wait_until(lambda: "listening on" in controller.log(), "listening")
        account = assert_resources_exist(settings)
        unauthorised = httpx.get(f"{url}/batches/b-1", timeout=5.0)
        key = {"Authorization": f"Bearer {settings.api_keys[0].get_secret_value()}"}
        unknown = httpx.get(f"{url}/batches/b-1", headers=key, timeout=5.0)
        roles = {"initiator": initiator, "processor": processor, "controller": controller}
        children = {name: descendants(running) for name, running in roles.items()}
        stops = terminate_all(roles)

    for name, (_, took) in stops.items():
        print(f"billing {name} stopped {took:.2f} s after SIGTERM")
    for running in roles.values():  # each role process (the processor's worker too) set it
        assert "youngest generation every 100,000 allocations" in running.log()

    log = initiator.log()
    # it runs with the key from the environment, and only with it
    assert (unauthorised.status_code, unknown.status_code) == (401, 404)
    # uvicorn shuts down gracefully, then re-raises the signal, which the command turns
    # into a normal exit (so that the intake helpers' pool shuts down on the way out)
    assert stops["initiator"][0] == 0, log
    assert "Application shutdown complete" in log
    assert "Finished server process" in log

    log = processor.log()
    assert stops["processor"][0] == 0, log
    assert heartbeat_statuses(settings) == ["stopped"]  # its last heartbeat, on the way out
    assert "processors stopped (clean)" in log

    log = controller.log()
    assert stops["controller"][0] == 0, log
    assert f"listening on {settings.output_queue}" in log
    assert "stopped (clean)" in log

    # the initiator's intake helpers (if this machine gives it any) and the processor's worker
    assert bool(children["initiator"]) == (helper_count(0) > 0), children
    assert children["processor"], children
    for name, processes in children.items():
        _gone, alive = psutil.wait_procs(processes, timeout=STOP_BOUND_SECONDS)
        assert not alive, f"{name} left {[p.cmdline() for p in alive]} running"

    for name, running in roles.items():
        # each role provisions what it needs itself (idempotently), whoever comes first
        assert f"resources ready on {account}" in running.log(), name
        assert stops[name][1] < STOP_BOUND_SECONDS, f"{name}:\n{running.log()[-3000:]}"
        assert "Traceback" not in running.log(), f"{name}:\n{running.log()[-3000:]}"


def test_billing_initiator_refuses_to_start_without_an_api_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= {"BILLING_DATA_DIR": str(tmp_path / "billing"), "COLUMNS": "200"}
    done = subprocess.run(
        [str(BILLING), "initiator"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    message = " ".join((done.stdout + done.stderr).split())  # rich wraps long lines
    assert done.returncode == 1
    assert "no API key configured: set BILLING_API_KEYS" in message
    assert "--insecure-local" in message
    assert "Uvicorn running" not in message
    assert "Traceback" not in message  # a clear one-line refusal, not a crash
