"""The operator's ends: ``billing processor`` as a process, ``billing release|hold``, and
``POST /control/release|hold`` on the initiator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from billing.cli.app import app as cli
from initiator.app import create_app
from shared import meter
from shared.coordination.gate import read_gate
from shared.settings import Settings
from shared.storage.embedded import EmbeddedStorageAccount
from tests.processor.deployment import deployment_settings, wait_until

REPO = Path(__file__).resolve().parents[2]
STOP_BOUND_SECONDS = 5.0


def heartbeats(data_dir: Path) -> dict[str, str]:
    """instance id → status, from the heartbeats table."""
    storage = EmbeddedStorageAccount(data_dir / "storage")
    try:
        table = storage.table("processors")
        if "processors" not in storage.list_tables():
            return {}
        return {e.row_key: e.properties["status"] for e in table.query("processor")}
    finally:
        storage.close()


def test_billing_processor_runs_n_processes_and_stops_on_sigterm(tmp_path: Path) -> None:
    data_dir = tmp_path / "billing"
    env = {**os.environ, "BILLING_DATA_DIR": str(data_dir), "BILLING_PARTITIONS": "2"}
    command = [sys.executable, "-c", "from billing.cli.app import main; main()"]
    supervisor = subprocess.Popen(
        [*command, "processor", "--processes", "2", "--priorities", "high,normal"],
        cwd=REPO,
        env=env,
    )
    try:
        running = wait_until(lambda: list(heartbeats(data_dir).values()) == ["running"] * 2, 60)
        assert running, f"two running processors expected, saw {heartbeats(data_dir)}"
        begin = time.perf_counter()
        supervisor.send_signal(signal.SIGTERM)
        code = supervisor.wait(timeout=30)
        took = time.perf_counter() - begin
    finally:
        supervisor.kill()
        supervisor.wait()
    print(f"billing processor stopped {took:.2f} s after SIGTERM")
    assert code == 0
    assert took < STOP_BOUND_SECONDS
    assert list(heartbeats(data_dir).values()) == ["stopped"] * 2


def test_billing_hold_and_release_flip_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BILLING_DATA_DIR", str(tmp_path / "billing"))
    runner = CliRunner()
    storage = EmbeddedStorageAccount(tmp_path / "billing" / "storage")
    control = storage.container(Settings(_env_file=None).control_container)  # type: ignore[call-arg]
    try:
        held = runner.invoke(cli, ["hold"])
        assert held.exit_code == 0, held.output
        assert read_gate(control) is False
        released = runner.invoke(cli, ["release"])
        assert released.exit_code == 0, released.output
        assert read_gate(control) is True
    finally:
        storage.close()


def test_billing_hold_creates_no_container_where_the_deployment_declared_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On Azure the roles' grants cover the containers' blobs, not creating containers:
    # with provisioning off, the operator commands only write the gate.
    monkeypatch.setenv("BILLING_DATA_DIR", str(tmp_path / "billing"))
    runner = CliRunner()
    assert runner.invoke(cli, ["hold"]).exit_code == 0  # the store and its containers made

    def container_writes() -> int:
        before = meter.container_snapshot()
        result = runner.invoke(cli, ["hold"])
        assert result.exit_code == 0, result.output
        after = meter.container_snapshot()
        key = ("blob.put", "control")
        return after.get(key, 0) - before.get(key, 0)

    provisioning = container_writes()
    monkeypatch.setenv("BILLING_PROVISION_RESOURCES", "false")
    declared = container_writes()
    assert provisioning - declared == 1  # the create, and only it, is left out
    assert declared >= 1  # the gate is still written


@pytest.mark.anyio
async def test_the_control_routes_flip_the_gate_and_need_a_key(
    tmp_path: Path, anyio_backend: str
) -> None:
    settings = deployment_settings(tmp_path, api_keys="k1")
    auth = {"Authorization": "Bearer k1"}
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://i") as client,
    ):
        assert (await client.post("/control/hold")).status_code == 401
        wrong = {"Authorization": "Bearer wrong"}
        assert (await client.post("/control/release", headers=wrong)).status_code == 401

        assert (await client.post("/control/hold", headers=auth)).json() == {"released": False}
        assert (await client.get("/control/gate", headers=auth)).json() == {"released": False}
        assert (await client.post("/control/release", headers=auth)).json() == {"released": True}
        assert (await client.get("/control/gate", headers=auth)).json() == {"released": True}
        control = app.state.services.storage.container(settings.control_container)
        assert read_gate(control) is True


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
