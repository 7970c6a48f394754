"""The release gate in ``billing submit --wait`` (a pseudo-terminal) and ``billing status``:
held, the batch says it waits for the release; released, it completes and reports the wait
apart from the processing. Against an all-in-one deployment in the test process."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from billing.sample_batches import write_batch_file
from tests.dashboard.serving import all_in_one
from tests.terminal.terminal import Terminal
from tests.terminal.test_top_and_wait import BILLING

API_KEY = "gate-cli-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with all_in_one(tmp_path_factory.mktemp("gate-cli"), API_KEY, chunk_size=50) as url:
        yield url


def open_batch_id(base_url: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batches = httpx.get(f"{base_url}/dashboard/data", headers=AUTH).json()["batches"]
        if batches:
            return str(batches[0]["batch_id"])
        time.sleep(0.2)
    raise AssertionError("no batch appeared")


def test_submit_wait_and_status_show_the_held_gate_then_the_wait(
    served: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    target = ["--url", served, "--api-key", API_KEY]
    batch = tmp_path / "gate.csv"
    write_batch_file(batch, 500, customers=20, seed=5, file_format="csv")
    httpx.post(f"{served}/control/hold", headers=AUTH).raise_for_status()
    submit = Terminal([*BILLING, "submit", str(batch), "--wait", *target], env)
    try:
        submit.read_until(
            lambda t: "gate held: waiting for release" in t, 30.0, "the held gate in the bar"
        )
        status = subprocess.run(
            [*BILLING, "status", open_batch_id(served), *target],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert status.returncode == 0, status.stderr
        assert re.search(r"gate\s*│\s*held \(the batch waits for a release\)", status.stdout)
        httpx.post(f"{served}/control/release", headers=AUTH).raise_for_status()
        assert submit.wait(120) == 0, submit.text()[-3000:]
    finally:
        httpx.post(f"{served}/control/release", headers=AUTH)
        submit.close()
    text = submit.text()
    assert re.search(r"reconciled\s*│\s*yes", text)
    assert re.search(r"waiting for release\s*│\s*\d+\.\d\d s", text)
    assert re.search(
        r"throughput: [\d,]+ transactions/s processing \(500 in [\d.]+ s, after [\d.]+ s "
        r"waiting for the release\)",
        text,
    )
