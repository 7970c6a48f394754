"""The initiator takes batch after batch under a small descriptor limit.

``billing initiator`` runs as a process with ``ulimit -n`` set low, as a small container
might have it, on the embedded backend (the default) and on Azurite. Each accepted batch
publishes through short-lived threads; anything they kept open per batch (a SQLite
connection with its WAL, a socket) would use up the limit within a few hundred batches and
fail every POST after it. Descriptors and threads are sampled between the batches and must
stay flat.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from billing.demo.cluster import free_port
from tests.e2e.test_roles import BILLING, READY_TIMEOUT_SECONDS, answers_healthz
from tests.support.deployment_settings import (
    azurite_connection_string,
    billing_environment,
    deployment_values,
)

DESCRIPTOR_LIMIT = 256
#: Enough to exhaust the limit many times over if a batch kept even one descriptor.
BATCHES = 300
API_KEY = "descriptor-test-key"
HEADER = "transaction_id,customer_id,sku,quantity,region,occurred_at\n"


def one_row_batch(n: int) -> bytes:
    """A different one-row batch each time (an identical body would be a duplicate)."""
    return f"{HEADER}tx-{n},cust-1,SEAT-PRO,3,EU,2026-01-01T00:00:00Z\n".encode()


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTOR_LIMIT, DESCRIPTOR_LIMIT))


@contextmanager
def initiator_process(env: dict[str, str], folder: Path) -> Iterator[psutil.Process]:
    log_path = folder / "initiator.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(BILLING), "initiator"],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_limit_descriptors,
        )
    try:
        yield psutil.Process(process.pid)
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    "backend", ["embedded", pytest.param("azurite", marks=pytest.mark.azurite)]
)
def test_descriptors_stay_flat_over_hundreds_of_batches(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    port = free_port()
    values = deployment_values(
        tmp_path,
        connection_string=azurite_connection_string(request, backend == "azurite"),
        partitions=1,
        api_keys=API_KEY,
        port=port,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= billing_environment(values)
    url = f"http://127.0.0.1:{port}"

    with (
        initiator_process(env, tmp_path) as initiator,
        httpx.Client(
            base_url=url,
            headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "text/csv"},
            timeout=30.0,
        ) as client,
    ):
        deadline_checks = int(READY_TIMEOUT_SECONDS / 0.05)
        for _ in range(deadline_checks):
            if answers_healthz(url):
                break
            assert initiator.is_running(), (tmp_path / "initiator.log").read_text()
            psutil.wait_procs([], timeout=0.05)
        samples: list[tuple[int, int]] = []
        for n in range(BATCHES):
            response = client.post("/batches", content=one_row_batch(n))
            assert response.status_code == 202, (n, response.status_code, response.text)
            if n % 100 == 99:
                samples.append((initiator.num_fds(), initiator.num_threads()))

    print(f"{backend}: (descriptors, threads) after each 100 batches: {samples}")
    first_fds, first_threads = samples[0]
    for fds, threads in samples[1:]:
        assert fds <= first_fds * 1.1 + 2, samples
        assert threads <= first_threads * 1.1 + 2, samples
