"""Graceful degradation: one dependency down or throttling, the rest carries on, nothing lost.

* the trigger topic unreachable (every bus request fails): the initiator still starts and
  accepts, and the processors find the work through their safety poll;
* the warehouse down (PostgreSQL behind a relay that the test cuts): the controller keeps its
  messages, poisons none of them, and applies them when the warehouse is back;
* storage throttling (40 % of storage requests answered 503 ``ServerBusy``): the SDK and the
  listeners back off and retry; every batch completes exactly once.

Storage throttling runs on both stacks; the other two on the embedded backend only, since
the storage backend plays no part in them (and the bus is the embedded one on both stacks).
A SQLite warehouse is a local file that cannot be "down"; its lock waits are the
warehouse's own tests.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from billing.sample_batches import write_batch_file
from tests.e2e.pipeline import RunningPipeline, running_pipeline
from tests.reliability.checks import assert_completed_once
from tests.reliability.client import submit, wait_until_closed
from tests.reliability.conftest import SettingsFactory
from tests.support.tcp_proxy import TcpProxy

TRANSACTIONS = 150
CHUNK_SIZE = 50
CHUNKS = TRANSACTIONS // CHUNK_SIZE
CLOSE_SECONDS = 90.0
CSV = {"Content-Type": "text/csv"}


def batch_file(folder: Path, seed: int) -> bytes:
    path = folder / f"batch-{seed}.csv"
    write_batch_file(path, TRANSACTIONS, customers=10, seed=seed)
    return path.read_bytes()


def wait_for(condition_met: object, what: str, timeout: float = 30.0) -> None:
    assert callable(condition_met)
    deadline = time.monotonic() + timeout
    while not condition_met():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def only_the_safety_poll_watches(pipeline: RunningPipeline) -> bool:
    return all(worker.snapshot().listener.safety_poll_only for worker in pipeline.processors)


def test_with_the_trigger_topic_unreachable_intake_accepts_and_the_safety_poll_finds_work(
    make_embedded_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_embedded_settings(
        faults="fail=1,statuses=503,on=bus",
        chunk_size=CHUNK_SIZE,
        safety_poll_seconds=1.0,
        # dequeue threads retire quickly, so that only the safety poll is left to find work
        backoff_min_idle_ms=50,
        backoff_max_idle_ms=200,
    )
    body = batch_file(tmp_path, seed=1)
    with running_pipeline(settings, processors=1) as pipeline:
        wait_for(lambda: only_the_safety_poll_watches(pipeline), "the dequeue threads to retire")
        submission = submit(pipeline.client, "no-trigger", body, priority="high", headers=CSV)
        status, _ = wait_until_closed(pipeline.client, submission.batch_id, timeout=CLOSE_SECONDS)
    assert submission.answers == [202]
    assert status["status"] == "completed", status
    assert status["reconciled"] is True
    assert_completed_once(settings, [submission], transactions=TRANSACTIONS)


@pytest.fixture
def proxied_postgres(postgres_url: str) -> tuple[str, TcpProxy]:
    """The test's PostgreSQL database, reached through a relay the test can cut."""
    url = make_url(postgres_url)
    proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    return url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False), proxy


@pytest.mark.postgres
def test_with_the_warehouse_down_the_controller_keeps_its_messages_and_resumes(
    make_embedded_settings: SettingsFactory,
    tmp_path: Path,
    proxied_postgres: tuple[str, TcpProxy],
    request: pytest.FixtureRequest,
) -> None:
    warehouse_url, proxy = proxied_postgres
    direct_url: str = request.getfixturevalue("postgres_url")
    settings = make_embedded_settings(
        warehouse_url=warehouse_url,
        chunk_size=CHUNK_SIZE,
        visibility_timeout_seconds=1,
        max_dequeue_count=3,
    )
    # Down for longer than a result message may be tried before it is poisoned.
    outage_seconds = (settings.max_dequeue_count + 3) * settings.visibility_timeout_seconds
    body = batch_file(tmp_path, seed=2)
    with proxy, running_pipeline(settings, processors=1) as pipeline:
        proxy.cut()
        submission = submit(pipeline.client, "warehouse-down", body, priority="high", headers=CSV)
        wait_for(lambda: pipeline.controller.warehouse_unreachable, "the controller to meet it")
        time.sleep(outage_seconds)
        assert pipeline.controller.warehouse_unreachable  # paused all along
        proxy.restore()
        wait_for(lambda: not pipeline.controller.warehouse_unreachable, "the controller to resume")
        status, _ = wait_until_closed(pipeline.client, submission.batch_id, timeout=CLOSE_SECONDS)
        controller = pipeline.controller.snapshot()
    print(f"controller after the outage: {controller}")
    assert status["status"] == "completed", status
    assert status["chunks"]["failed"] == 0
    assert status["reconciled"] is True
    assert controller.chunks_applied == CHUNKS
    assert_completed_once(
        settings, [submission], transactions=TRANSACTIONS, warehouse_url=direct_url
    )


def test_under_storage_throttling_work_backs_off_and_completes_exactly_once(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(
        faults="fail=0.4,statuses=503,on=storage,seed=5",
        chunk_size=CHUNK_SIZE,
        storage_retry_total=5,
        storage_retry_backoff_seconds=0.05,
        visibility_timeout_seconds=5,
        safety_poll_seconds=2.0,
    )
    bodies = [batch_file(tmp_path, seed=10 + n) for n in range(3)]
    with running_pipeline(settings, processors=2) as pipeline:
        submissions = [
            submit(pipeline.client, f"busy-{n}", body, priority="normal", headers=CSV)
            for n, body in enumerate(bodies)
        ]
        closed = [
            wait_until_closed(pipeline.client, s.batch_id, timeout=CLOSE_SECONDS)
            for s in submissions
        ]
        listeners = [worker.snapshot().listener for worker in pipeline.processors]
    print(
        f"answers {[s.answers for s in submissions]}; receive/handler errors the listeners "
        f"backed off from: {[listener.errors for listener in listeners]}"
    )
    assert [s.replayed_after_an_error for s in submissions] == [False] * len(submissions)
    for status, _ in closed:
        assert status["status"] == "completed", status
        assert status["reconciled"] is True
    assert_completed_once(settings, submissions, transactions=TRANSACTIONS)
