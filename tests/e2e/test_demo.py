"""``billing demo`` as a user runs it: a subprocess, its exit code and what it prints.

The demo itself starts the three roles as processes (``billing/demo``); here it runs on the
embedded backend and on an Azurite it starts itself (skipped without Node on a developer
machine, failing under CI like every Azurite test). Its failure path — a batch that does not
reconcile must make it exit non-zero — is tested on the command's own exit logic with a
:class:`~billing.demo.scenario.DemoResult` that does not reconcile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from billing.cli import demo as demo_command
from billing.cli.app import app as billing
from billing.demo.scenario import DemoResult, run_demo, run_stream
from billing.devtools.azurite import AzuriteUnavailableError, azurite_dir, ensure_azurite
from tests.api.batch_files import csv_file, rows
from tests.support.azurite import running_azurite, unavailable

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO_TIMEOUT_SECONDS = 180


def run_demo_command(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m billing.cli demo …`` from the repository, in a clean environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env["COLUMNS"] = "120"  # rich wraps at the terminal width; keep lines whole
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "billing.cli", "demo", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_SECONDS,
        check=False,
    )
    took = time.monotonic() - started
    print(f"billing demo {' '.join(args)}: exit {done.returncode} in {took:.1f} s")
    return done


def assert_reconciled_run(done: subprocess.CompletedProcess[str], transactions: int) -> None:
    output = done.stdout
    assert done.returncode == 0, f"{output[-3000:]}\n{done.stderr[-3000:]}"
    assert "is completed" in output
    assert "result: reconciled" in output
    assert "NOT reconciled" not in output
    # the reconciliation table's row: intake and the warehouse both counted every transaction
    row = next(line for line in output.splitlines() if "│ transactions" in line)
    cells = [cell.strip() for cell in row.split("│")]
    assert cells[1:4] == ["transactions", f"{transactions:,}", f"{transactions:,}"], row


def test_the_demo_runs_the_whole_pipeline_on_the_embedded_backend_and_reconciles() -> None:
    done = run_demo_command("--transactions", "5000", "--processes", "2")
    assert_reconciled_run(done, 5000)


@pytest.fixture
def azurite_installed() -> None:
    """The demo starts its own Azurite: only check that one can be installed and run."""
    try:
        ensure_azurite(azurite_dir())
    except AzuriteUnavailableError as error:
        unavailable(str(error))


@pytest.mark.azurite
@pytest.mark.usefixtures("azurite_installed")
def test_the_demo_on_azurite_reconciles() -> None:
    done = run_demo_command("--transactions", "2000", "--processes", "2", "--backend", "azurite")
    assert_reconciled_run(done, 2000)


# --- the exit logic -----------------------------------------------------------------------
def demo_result(*, status: str, reconciled: bool | None) -> DemoResult:
    """What ``run_demo`` returns, for a 3-transaction batch of one customer."""
    control = {"transactions": 3, "quantity": 12, "id_checksum": 987654321}
    warehouse = control if reconciled else {**control, "transactions": 2, "quantity": 9}
    invoice: dict[str, Any] = {
        "customer_id": "cust-1",
        "currency": "USD",
        "lines": 3,
        "quantity": 12,
        "gross": 1200,
        "discount": 0,
        "net": 1200,
        "tax": 240,
        "total": 1440,
    }
    return DemoResult(
        batch_id="b-demo",
        transactions=3,
        status={
            "status": status,
            "control_totals": control,
            "warehouse_totals": warehouse if status == "completed" else None,
            "reconciled": reconciled,
        },
        invoices={"batch_id": "b-demo", "offset": 0, "total_invoices": 1, "invoices": [invoice]},
        seconds=1.5,
        storage_requests={"queue.get": 10, "blob.put": 4},
    )


@pytest.mark.parametrize(
    ("status", "reconciled", "exit_code", "verdict"),
    [
        ("completed", True, 0, "result: reconciled"),
        ("completed", False, 1, "result: NOT reconciled"),
        ("failed", None, 1, "result: NOT reconciled"),
    ],
    ids=["reconciled", "not-reconciled", "batch-failed"],
)
def test_the_demo_exits_non_zero_unless_the_batch_reconciled(
    monkeypatch: pytest.MonkeyPatch,
    status: str,
    reconciled: bool | None,
    exit_code: int,
    verdict: str,
) -> None:
    result = demo_result(status=status, reconciled=reconciled)
    calls: list[dict[str, Any]] = []

    def fake_run_demo(**options: Any) -> DemoResult:
        calls.append(options)
        return result

    monkeypatch.setattr(demo_command, "run_demo", fake_run_demo)

    outcome = CliRunner().invoke(
        billing, ["demo", "--transactions", "3", "--processes", "1"], terminal_width=120
    )

    [options] = calls
    assert {name: options[name] for name in ("transactions", "processes", "backend", "keep")} == {
        "transactions": 3,
        "processes": 1,
        "backend": "embedded",
        "keep": None,
    }
    assert options["linger"] is None  # without --stay the roles stop after the batch
    assert outcome.exit_code == exit_code, outcome.output
    assert f"batch b-demo is {status}" in outcome.output
    assert verdict in outcome.output


def test_the_demo_counts_its_batchs_requests_not_later_batches_nor_the_dashboards() -> None:
    """``--stay`` runs more batches after the demo's, and a dashboard may watch all along:
    the per-1,000 figure is the demo batch's, from its submission to its close."""
    watched: list[httpx.Client] = []

    def watch(base_url: str, api_key: str) -> None:  # the dashboard open from the start
        client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {api_key}"})
        watched.append(client)
        assert client.get("/dashboard/live", timeout=30).status_code == 200

    def another_batch() -> None:  # what a user of --stay does next
        [client] = watched
        response = client.post(
            "/batches", content=csv_file(rows(2000)), headers={"Content-Type": "text/csv"}
        )
        assert response.status_code == 202, response.text
        batch_id = response.json()["batch_id"]
        deadline = time.monotonic() + 60
        while client.get(f"/batches/{batch_id}").json()["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.2)

    try:
        result = run_demo(transactions=2000, processes=1, on_ready=watch, linger=another_batch)
    finally:
        for client in watched:
            client.close()
    assert result.reconciled
    chunks = result.status["chunks"]["total"]
    # Each chunk is put on a work queue once and its result on the results queue once:
    # the second batch's puts are not in the figure.
    assert result.storage_requests["queue.put"] == 2 * chunks
    assert all("@" not in kind for kind in result.storage_requests)
    # The dashboard's sampling during the batch is reported apart.
    assert result.onlooker_requests
    # The dashboard's depth queries, and the status polls' listing of rated chunks.
    assert all(kind.endswith(("@dashboard", "@status")) for kind in result.onlooker_requests)


def test_the_demo_and_the_stream_run_again_on_a_store_that_holds_their_batches() -> None:
    """The demo's batch is the same file every run; on a store kept from an earlier run
    (one Azurite for several runs, as the benchmarks' rounds use) it is billed again, not
    refused as the same file sent twice."""
    with running_azurite() as info:
        for _ in range(2):
            result = run_demo(
                transactions=1000,
                processes=1,
                backend="azurite",
                storage_connection_string=info.connection_string,
            )
            assert result.reconciled
            stream = run_stream(
                batches=2,
                transactions=1000,
                processes=1,
                backend="azurite",
                storage_connection_string=info.connection_string,
            )
            assert stream.reconciled
