"""``billing controller``, ``billing status``, ``billing invoices``, ``billing warehouse upgrade``.

On the embedded backend + SQLite only: these test the commands' wiring; the behaviour
behind them runs on both stacks in the other modules.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from sqlalchemy import inspect
from typer.testing import CliRunner

from billing.cli.app import app as billing
from billing.demo.cluster import free_port
from controller.worker import build_result_handler, order_id_allocator
from initiator.app import create_app
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.warehouse import make_engine, upgrade
from shared.warehouse.migrate import head_revision
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.conftest import wait_until_closed
from tests.controller.killed_controller import settings_to_json
from tests.support.reference_rater import SAMPLE_BOOK, reference_invoices

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "controller-test-key"


@pytest.fixture(params=["embedded+sqlite"])
def stack(request: pytest.FixtureRequest) -> str:
    """Overrides the folder's two stacks: the commands' wiring is backend-independent."""
    return str(request.param)


def settings_env(settings: Settings) -> dict[str, str]:
    """``BILLING_*`` variables that rebuild ``settings`` in a child process."""
    env: dict[str, str] = {}
    for name, value in json.loads(settings_to_json(settings)).items():
        if value is None:
            continue
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        env[f"BILLING_{name.upper()}"] = text
    return env


@pytest.fixture
def initiator_url(settings: Settings) -> Iterator[str]:
    """The initiator served over real HTTP on a free port, in a thread."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the initiator did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_billing_controller_reduces_a_batch_and_stops_on_sigterm_within_5_s(
    settings: Settings, storage: StorageAccount
) -> None:
    batch = publish_batch(storage, settings, "b-cli", make_transactions(60), chunk_size=20)
    output = storage.queue(settings.output_queue)
    for message in batch.results:
        output.send(message.to_text())
    env = {**os.environ, **settings_env(settings)}

    process = subprocess.Popen(
        [sys.executable, "-m", "billing.cli", "controller"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        record = wait_until_closed(storage, settings, batch.batch_id)
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        returncode = process.wait(timeout=30)
        stopped_after = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
    log = process.stdout.read().decode(errors="replace") if process.stdout else ""

    print(f"billing controller stopped {stopped_after:.2f} s after SIGTERM")
    assert record.reconciled is True
    assert returncode == 0, log[-3000:]
    assert stopped_after < 5.0, log[-3000:]
    assert "3 chunks applied" in log


def test_billing_status_and_invoices_print_the_apis_answers(
    settings: Settings, storage: StorageAccount, initiator_url: str
) -> None:
    transactions = make_transactions(40, seed=43, customers=3)
    batch = publish_batch(storage, settings, "b-report", transactions, chunk_size=20)
    upgrade(settings.resolved_warehouse_url)
    engine = make_engine(settings.resolved_warehouse_url)
    handler = build_result_handler(settings, storage, engine, order_id_allocator(settings, storage))
    for message in batch.results:
        handler.handle_text(message.to_text())
    engine.dispose()
    runner = CliRunner()
    common = ["--url", initiator_url, "--api-key", API_KEY]

    status = runner.invoke(billing, ["status", "b-report", *common], terminal_width=200)
    as_json = runner.invoke(billing, ["status", "b-report", *common, "--json"])
    invoices = runner.invoke(billing, ["invoices", "b-report", *common], terminal_width=200)
    missing = runner.invoke(billing, ["status", "b-nope", *common])

    assert status.exit_code == 0, status.output
    assert "completed" in status.output
    assert "2 applied, 0 failed, 0 in flight, of 2" in status.output
    assert "yes" in status.output  # reconciled
    assert json.loads(as_json.output)["reconciled"] is True
    assert invoices.exit_code == 0, invoices.output
    expected = reference_invoices(SAMPLE_BOOK, transactions)
    biggest = max(expected, key=lambda customer: expected[customer]["total"])
    assert "of 3" in invoices.output
    assert biggest in invoices.output
    total = expected[biggest]["total"]
    assert f"{total // 100:,}.{total % 100:02d}" in invoices.output
    assert "total (USD)" in invoices.output  # one currency on the page: said once
    assert missing.exit_code == 1
    assert "404" in missing.output


def test_billing_status_watch_follows_a_batch_until_it_completes(
    settings: Settings, storage: StorageAccount, initiator_url: str
) -> None:
    batch = publish_batch(storage, settings, "b-watch", make_transactions(40), chunk_size=20)
    upgrade(settings.resolved_warehouse_url)
    engine = make_engine(settings.resolved_warehouse_url)
    handler = build_result_handler(settings, storage, engine, order_id_allocator(settings, storage))

    def apply_later() -> None:
        time.sleep(1.5)  # the watch has shown the batch unfinished at least once
        for message in batch.results:
            handler.handle_text(message.to_text())

    applier = threading.Thread(target=apply_later)
    applier.start()
    watched = CliRunner().invoke(
        billing,
        ["status", "b-watch", "--watch", "--url", initiator_url, "--api-key", API_KEY],
        terminal_width=200,
    )
    applier.join()
    engine.dispose()

    assert watched.exit_code == 0, watched.output
    # Called before any chunk was applied, it returned only once the batch had completed.
    assert "completed" in watched.output
    assert "2 applied, 0 failed, 0 in flight, of 2" in watched.output
    # Not a terminal: the final table once, its last line ended (a log's next line starts
    # on a line of its own), and no earlier state redrawn.
    assert watched.output.endswith("\n")
    assert watched.output.count("status") == 1


def test_billing_warehouse_upgrade_migrates_the_configured_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'cli' / 'warehouse.sqlite3'}"
    monkeypatch.setenv("BILLING_WAREHOUSE_URL", url)

    first = CliRunner().invoke(billing, ["warehouse", "upgrade"])
    again = CliRunner().invoke(billing, ["warehouse", "upgrade"])

    assert first.exit_code == again.exit_code == 0, first.output
    assert f"warehouse at revision {head_revision()}" in again.output
    engine = make_engine(url)
    try:
        assert {"batches", "charges", "invoices", "applied_chunks"} <= set(
            inspect(engine).get_table_names()
        )
    finally:
        engine.dispose()
