"""``BILLING_FAULTS`` in the environment of separate role processes, as an operator sets it.

``billing initiator``, ``billing processor`` and ``billing controller`` run as processes of one
deployment, each with ``BILLING_FAULTS`` in its environment: each says loudly that it runs
under faults, and batches submitted by a retrying client still complete, reconciled, once.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from billing.demo.cluster import free_port
from billing.sample_batches import write_batch_file
from tests.e2e.test_roles import Deployment, answers_healthz, heartbeat_statuses, role
from tests.reliability.client import submit, wait_until_closed
from tests.support.deployment_settings import (
    billing_environment,
    deployment_values,
    settings_factory,
)

FAULTS = "fail=0.08,timeout=0.02,lose=0.02,seed=3"
TRANSACTIONS = 120


@pytest.fixture
def deployment(tmp_path: Path) -> Deployment:
    """On the embedded backend: the in-process suite covers Azurite's transports; here the
    point is the processes and their environment."""
    values = deployment_values(
        tmp_path,
        partitions=1,
        api_keys="faults-test-key",
        port=free_port(),
        faults=FAULTS,
        chunk_size=40,
        storage_retry_total=5,
        storage_retry_backoff_seconds=0.05,
        visibility_timeout_seconds=5,
        safety_poll_seconds=2,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= billing_environment(values)
    return Deployment(env=env, settings=settings_factory(values)(), folder=tmp_path)


def test_role_processes_under_billing_faults_say_so_and_complete_batches(
    deployment: Deployment,
) -> None:
    settings = deployment.settings
    url = f"http://127.0.0.1:{settings.port}"
    key = settings.api_keys[0].get_secret_value()
    bodies = []
    for seed in (1, 2):
        path = deployment.folder / f"batch-{seed}.csv"
        write_batch_file(path, TRANSACTIONS, customers=8, seed=seed)
        bodies.append(path.read_bytes())

    with (
        role(deployment, "initiator") as initiator,
        role(deployment, "processor", "--processes", "1") as processor,
        role(deployment, "controller") as controller,
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30.0
        ) as client,
    ):
        initiator.wait_until(lambda: answers_healthz(url), "healthy")
        processor.wait_until(lambda: "running" in heartbeat_statuses(settings), "running")
        controller.wait_until(lambda: "listening on" in controller.log(), "listening")
        csv = {"Content-Type": "text/csv"}
        submissions = [
            submit(client, f"file-{n}", body, priority="normal", headers=csv)
            for n, body in enumerate(bodies)
        ]
        closed = [wait_until_closed(client, s.batch_id, timeout=90.0)[0] for s in submissions]

    print(f"answers {[s.answers for s in submissions]}")
    for status in closed:
        assert status["status"] == "completed", status
        assert status["reconciled"] is True
    assert not any(s.replayed_after_an_error for s in submissions)
    for name, running in {
        "initiator": initiator,
        "processor": processor,
        "controller": controller,
    }.items():
        assert "FAULT INJECTION ON" in running.log(), name
        assert "BILLING_FAULTS=fail=0.08" in running.log(), name
