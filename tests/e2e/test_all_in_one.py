"""``billing serve --all-in-one``: the three roles in one process, as a user starts it.

The command runs as a subprocess on the embedded backend and on Azurite (the warehouse is
SQLite in its data folder on both), is driven over HTTP with ``httpx``, and is stopped with
SIGTERM, which must end it cleanly within 5 s. The figures that come out are checked
against the tests' independent reference rater.
"""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from billing.cli.app import app as billing
from billing.demo.cluster import free_port
from billing.sample_batches import generate_lines
from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.transactions import Transaction
from tests.support.deployment_settings import (
    azurite_connection_string,
    billing_environment,
    deployment_values,
)
from tests.support.reference_rater import INVOICE_FIGURES, SAMPLE_BOOK, reference_invoices
from tests.support.transaction_rows import transaction_from_row

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "all-in-one-test-key"
CHUNK_SIZE = 50
TRANSACTIONS = 300
#: A supervisor's usual grace between SIGTERM and SIGKILL; the command must be done by then.
STOP_LIMIT_SECONDS = 5.0
CLOSED = FINAL_STATUSES
SERVE_COMMAND = (sys.executable, "-m", "billing.cli", "serve", "--all-in-one")


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def backend_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """``BILLING_*`` variables of a fresh deployment on the parametrized storage backend."""
    values = deployment_values(
        tmp_path,
        connection_string=azurite_connection_string(request, request.param == "azurite"),
        api_keys=API_KEY,
        chunk_size=CHUNK_SIZE,
        partitions=2,
        # The controller has no push trigger yet (it polls its queue with a back-off, up to
        # 30 s by default): cap its sleep so that a test does not wait for it.
        backoff_max_idle_ms=500,
    )
    return billing_environment(values)


class Served:
    """One ``billing serve --all-in-one`` process and an HTTP client on it."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.port = free_port()
        self.log_path = folder / f"serve-{self.port}.log"
        folder.mkdir(parents=True, exist_ok=True)
        # Only the test's own BILLING_* settings: none leaks in from the developer's shell.
        clean = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [*SERVE_COMMAND, "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=folder,  # no stray .env file is read
                env={**clean, **env, "PYTHONPATH": str(REPO_ROOT)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {API_KEY}"},
            timeout=30.0,
        )

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve exited early:\n{self.log[-3000:]}"
            try:
                if self.client.get("/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"serve did not answer within {timeout:.0f} s:\n{self.log[-3000:]}")

    def submit(self, body: bytes) -> dict[str, Any]:
        response = self.client.post("/batches", content=body, headers={"Content-Type": "text/csv"})
        assert response.status_code == 202, response.text
        accepted: dict[str, Any] = response.json()
        return accepted

    def status(self, batch_id: str) -> dict[str, Any]:
        status: dict[str, Any] = self.client.get(f"/batches/{batch_id}").raise_for_status().json()
        return status

    def wait_until_closed(self, batch_id: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"serve exited:\n{self.log[-3000:]}"
            status = self.status(batch_id)
            if status["status"] in CLOSED:
                return status
            time.sleep(0.1)
        raise AssertionError(f"batch {batch_id} not closed in {timeout:.0f} s: {status}")

    def terminate(self) -> tuple[int, float]:
        """SIGTERM; the exit code and how long the process took to end."""
        self.client.close()
        sent = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        finally:
            self.kill()
        return code, time.monotonic() - sent

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def serve(backend_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[[], Served]]:
    """Start ``billing serve --all-in-one`` (as often as a test wants; killed at the end).
    Each start reads ``backend_env`` then, so a test may add settings before it starts."""
    started: list[Served] = []

    def start() -> Served:
        served = Served(backend_env, tmp_path / "run")
        started.append(served)
        return served

    yield start
    for served in started:
        served.kill()


def batch_file(transactions: int, seed: int) -> tuple[bytes, list[Transaction]]:
    """A generated CSV batch and its transactions, read back with the standard library."""
    text = "".join(generate_lines(transactions, customers=15, seed=seed))
    rows = csv.DictReader(io.StringIO(text))
    return text.encode(), [transaction_from_row(row) for row in rows]


def served_invoices(served: Served, batch_id: str) -> dict[str, dict[str, int]]:
    page = served.client.get(f"/batches/{batch_id}/invoices", params={"limit": 100})
    return {
        invoice["customer_id"]: {name: invoice[name] for name in INVOICE_FIGURES}
        for invoice in page.raise_for_status().json()["invoices"]
    }


def assert_completed_and_matches_the_reference(
    served: Served, status: dict[str, Any], transactions: list[Transaction]
) -> None:
    chunks = -(-len(transactions) // CHUNK_SIZE)
    assert status["status"] == "completed", status
    assert status["chunks"] == {
        "total": chunks,
        "rated": chunks,
        "applied": chunks,
        "failed": 0,
        "in_flight": 0,
    }
    assert status["reconciled"] is True
    assert status["warehouse_totals"] == status["control_totals"]
    assert status["control_totals"]["transactions"] == len(transactions)
    assert status["control_totals"]["quantity"] == sum(tx.quantity for tx in transactions)
    assert served_invoices(served, status["batch_id"]) == reference_invoices(
        SAMPLE_BOOK, transactions
    )


def assert_stopped_cleanly(served: Served) -> None:
    code, seconds = served.terminate()
    print(f"serve --all-in-one exited {seconds:.2f} s after SIGTERM (limit {STOP_LIMIT_SECONDS})")
    log = served.log
    assert code == 0, log[-3000:]
    assert seconds < STOP_LIMIT_SECONDS, log[-3000:]
    assert "all-in-one stopped (clean)" in log


def test_one_process_takes_a_batch_to_reconciliation_and_stops_on_sigterm(
    serve: Callable[[], Served],
) -> None:
    body, transactions = batch_file(TRANSACTIONS, seed=41)
    served = serve()
    served.wait_healthy()

    accepted = served.submit(body)
    started = time.monotonic()
    status = served.wait_until_closed(accepted["batch_id"])
    print(f"{TRANSACTIONS} transactions completed {time.monotonic() - started:.2f} s after 202")

    assert accepted["chunks"] == TRANSACTIONS // CHUNK_SIZE
    assert_completed_and_matches_the_reference(served, status, transactions)
    assert_stopped_cleanly(served)
    log = served.log
    assert "initiator, processor and controller running in one process" in log
    assert f"{TRANSACTIONS} transactions in {TRANSACTIONS // CHUNK_SIZE} chunks" in log


def test_accepted_work_survives_a_restart_and_the_release_travels_in_process(
    serve: Callable[[], Served], backend_env: dict[str, str]
) -> None:
    """Held processors, a batch accepted, SIGTERM; after a restart a release over HTTP
    reaches the processor through the in-process bus (the gate's own poll is set to
    5 minutes here, so only the in-memory broadcast can open it in time)."""
    backend_env["BILLING_SAFETY_POLL_SECONDS"] = "300"
    body, transactions = batch_file(120, seed=42)
    first = serve()
    first.wait_healthy()
    assert first.client.post("/control/hold").json() == {"released": False}
    accepted = first.submit(body)
    waiting = first.status(accepted["batch_id"])
    assert_stopped_cleanly(first)

    second = serve()
    second.wait_healthy()
    still_waiting = second.status(accepted["batch_id"])
    assert second.client.get("/control/gate").json() == {"released": False}  # durable
    assert second.client.post("/control/release").json() == {"released": True}
    status = second.wait_until_closed(accepted["batch_id"])

    assert waiting["chunks"]["applied"] == still_waiting["chunks"]["applied"] == 0
    assert_completed_and_matches_the_reference(second, status, transactions)
    assert_stopped_cleanly(second)


def test_serve_without_all_in_one_points_to_the_separate_roles() -> None:
    result = CliRunner().invoke(billing, ["serve"])
    assert result.exit_code == 2
    assert "billing initiator" in result.output
    assert "--all-in-one" in result.output
