"""Batches through all three roles while storage and the bus fail, time out and lose answers.

Every role runs under ``BILLING_FAULTS="fail=0.1,lose=0.02,seed=…"``: a tenth of all storage
and bus requests (each attempt, retries included) answer 500, 503 or 429, and one in fifty is
applied by the server and then loses its response. Clients submit batch files the way a real
one would (``client.py``: same bytes, same ``Idempotency-Key``, again after an error).

What must hold, on the embedded backend and on Azurite:

* every file ends as exactly one batch, completed and reconciled: its warehouse totals equal
  its control totals, and the warehouse holds no batch that no client was given;
* no client is told an error (a 5xx "not accepted", or a 409) for a batch that is then
  processed: its retry would otherwise meet that batch again as a replay (200);
* every transaction is in ``charges`` once, with an order id nobody else has, and no result
  message was poisoned.
"""

from __future__ import annotations

import time
from pathlib import Path

from billing.sample_batches import write_batch_file
from shared.settings import Priority
from tests.e2e.pipeline import running_pipeline
from tests.reliability.checks import assert_completed_once
from tests.reliability.client import Submission, submit, wait_until_closed
from tests.reliability.conftest import SettingsFactory

FAULTS = "fail=0.08,timeout=0.02,lose=0.02,seed={seed}"
FILES = 6
TRANSACTIONS = 150
CHUNK_SIZE = 50
PRIORITIES: tuple[Priority, ...] = ("high", "normal", "low")
CLOSE_SECONDS = 90.0


def test_batches_complete_exactly_once_while_storage_and_bus_fail(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings(
        faults=FAULTS.format(seed=7),
        chunk_size=CHUNK_SIZE,
        # the SDK's budget as deployed (5 retries), with a short back-off for a test
        storage_retry_total=5,
        storage_retry_backoff_seconds=0.05,
        # a lost receive hides its messages this long; a lost trigger waits for the poll
        visibility_timeout_seconds=5,
        safety_poll_seconds=2.0,
    )
    files = {}
    for n in range(FILES):
        path = tmp_path / f"batch-{n}.csv"
        write_batch_file(path, TRANSACTIONS, customers=10, seed=100 + n)
        files[path.name] = path.read_bytes()

    started = time.monotonic()
    with running_pipeline(settings, processors=2) as pipeline:
        submissions: list[Submission] = [
            submit(
                pipeline.client,
                name,
                body,
                priority=PRIORITIES[n % len(PRIORITIES)],
                headers={"Content-Type": "text/csv"},
            )
            for n, (name, body) in enumerate(files.items())
        ]
        closed = {
            s.batch_id: wait_until_closed(pipeline.client, s.batch_id, timeout=CLOSE_SECONDS)
            for s in submissions
        }
    elapsed = time.monotonic() - started

    print(
        f"{FILES} batches in {elapsed:.1f} s; answers "
        f"{[s.answers for s in submissions]}; status polls answered 503: "
        f"{sum(errors for _, errors in closed.values())}"
    )
    lied_to = [s.name for s in submissions if s.replayed_after_an_error]
    assert lied_to == [], f"told an error for a batch that was processed: {submissions}"
    for submission in submissions:
        status, _ = closed[submission.batch_id]
        assert status["status"] == "completed", status
        assert status["reconciled"] is True, status
        assert status["warehouse_totals"] == status["control_totals"]
        assert status["transactions"] == TRANSACTIONS

    assert_completed_once(settings, submissions, transactions=TRANSACTIONS)
