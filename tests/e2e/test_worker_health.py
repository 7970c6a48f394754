"""``billing controller`` and ``billing processor`` answer probes on BILLING_HEALTH_PORT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from billing.demo.cluster import free_port
from tests.support.deployment_settings import billing_environment, deployment_values

BILLING = Path(sys.executable).with_name("billing")


@pytest.mark.parametrize("args", [["controller"], ["processor", "--processes", "1"]])
def test_a_worker_answers_health_probes(args: list[str], tmp_path: Path) -> None:
    port = free_port()
    values = deployment_values(tmp_path, partitions=1, health_port=port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= billing_environment(values) | {"BILLING_HOST": "127.0.0.1"}
    log = tmp_path / "role.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(BILLING), *args], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        assert response.status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
