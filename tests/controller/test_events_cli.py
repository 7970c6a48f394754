"""``billing events tail``, ``billing events deliveries`` and ``billing events redeliver``.

On the embedded backend + SQLite only: these test the commands' wiring; the relay and
the deliveries behind them run on both stacks in test_batch_events and test_webhooks.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from billing.cli.app import app as billing
from shared.contracts.batch_event import Outcome, event_id
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.controller.batches import make_transactions, publish_batch
from tests.controller.conftest import SettingsFactory, WorkerFactory, wait_until_closed
from tests.controller.test_cli import settings_env
from tests.controller.test_webhooks import SECRET
from tests.support.webhook_server import Received, webhook_server

BILLING = Path(sys.executable).with_name("billing")
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["embedded+sqlite"])
def stack(request: pytest.FixtureRequest) -> str:
    """Overrides the folder's two stacks: the commands' wiring is backend-independent."""
    return str(request.param)


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received]]:
    with webhook_server(fail_first=1) as server:
        yield server


@pytest.fixture
def settings(make_settings: SettingsFactory, receiver: tuple[str, Received]) -> Settings:
    url, _ = receiver
    return make_settings(
        events_relay_poll_seconds=0.05,
        webhook_secret=SECRET,
        webhook_retry_schedule=[0],  # one attempt, then it gives up
        webhook_urls=[url],
        callback_allowed_networks=["127.0.0.0/8"],
    )


def run_a_batch(settings: Settings, storage: StorageAccount, start: WorkerFactory) -> str:
    batch = publish_batch(storage, settings, "b-cli-events", make_transactions(20), chunk_size=20)
    storage.queue(settings.output_queue).send(batch.results[0].to_text())
    start()
    wait_until_closed(storage, settings, batch.batch_id)
    return batch.batch_id


def test_tail_prints_each_event_as_it_is_published(
    settings: Settings, storage: StorageAccount, start_worker: WorkerFactory
) -> None:
    tail = subprocess.Popen(
        [str(BILLING), "events", "tail", "--count", "1", "--json"],
        cwd=REPO_ROOT,
        env=settings_env(settings) | {"PATH": str(BILLING.parent), "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        bus_db = settings.data_dir / "bus" / "bus.sqlite"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _subscribed(bus_db, settings.events_topic):
            assert tail.poll() is None, tail.stderr.read() if tail.stderr else ""
            time.sleep(0.05)
        batch_id = run_a_batch(settings, storage, start_worker)
        out, err = tail.communicate(timeout=30)
    finally:
        if tail.poll() is None:
            tail.kill()
    assert tail.returncode == 0, err.decode()
    event = json.loads(out)
    assert event["id"] == event_id(batch_id, Outcome.COMPLETED)
    assert event["type"] == "billing.batch.completed"


def _subscribed(bus_db: Path, topic: str) -> bool:
    """Whether ``tail`` has opened its subscription in the embedded bus's folder."""
    if not bus_db.exists():
        return False
    query = "SELECT count(*) FROM subscriptions WHERE topic = ? AND name = 'tail'"
    try:
        with sqlite3.connect(bus_db) as connection:
            return bool(connection.execute(query, (topic,)).fetchone()[0])
    except sqlite3.OperationalError:  # the file is there, its tables not yet
        return False


def test_deliveries_lists_the_attempts_and_redeliver_sends_again_with_the_same_id(
    settings: Settings,
    storage: StorageAccount,
    start_worker: WorkerFactory,
    receiver: tuple[str, Received],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = receiver
    batch_id = run_a_batch(settings, storage, start_worker)
    deadline = time.monotonic() + 30
    while received.statuses() != [500] and time.monotonic() < deadline:
        time.sleep(0.05)
    for name, value in settings_env(settings).items():
        monkeypatch.setenv(name, value)
    runner = CliRunner()

    listed = runner.invoke(billing, ["events", "deliveries"])
    assert listed.exit_code == 0, listed.output
    assert (
        f"{batch_id}  billing.batch.completed  {url}  gave_up after 1 attempt(s)" in listed.output
    )
    delivery_id = listed.output.split()[0]

    again = runner.invoke(billing, ["events", "redeliver", delivery_id])
    assert again.exit_code == 0, again.output
    assert f"delivery {delivery_id} delivered" in again.output
    assert received.statuses() == [500, 204]
    assert {headers["webhook-id"] for headers, _, _ in received.requests} == {
        event_id(batch_id, Outcome.COMPLETED)
    }

    listed = runner.invoke(billing, ["events", "deliveries", "--batch", batch_id])
    assert "delivered after 2 attempt(s)" in listed.output
    assert [line.split()[-1] for line in listed.output.splitlines()[1:]] == ["500", "204"]


def test_redeliver_of_an_unknown_delivery_says_so(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in settings_env(settings).items():
        monkeypatch.setenv(name, value)
    from shared.warehouse import upgrade

    upgrade(settings.resolved_warehouse_url)

    result = CliRunner().invoke(billing, ["events", "redeliver", "999"])

    assert result.exit_code == 1
    assert "no webhook delivery 999" in result.output
