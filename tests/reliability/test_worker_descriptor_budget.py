"""The processor and the controller work through hundreds of batches under a small
descriptor limit.

All three roles run as ``billing`` processes with ``ulimit -n 256``, as a small container
might have it. Every one-row batch is a work item the processor dequeues and rates and a
result the controller applies to the warehouse and closes, each on short-lived or pooled
threads; anything either kept open per batch (a SQLite connection with its WAL, a socket, a
blob download) would pile up over a few hundred batches and end at the limit. Descriptors
and threads of both are sampled while the batches arrive and once the last one has closed;
from the first sample on (the roles' connections and pools are open by then) they must stay
flat, and every batch must complete.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from billing.demo.cluster import free_port
from shared.contracts.batch_status import FINAL_STATUSES
from tests.e2e.test_roles import BILLING, READY_TIMEOUT_SECONDS, answers_healthz
from tests.reliability.test_descriptor_budget import (
    API_KEY,
    _limit_descriptors,
    one_row_batch,
)
from tests.support.deployment_settings import (
    azurite_connection_string,
    billing_environment,
    deployment_values,
)

#: With the roles' own 60-90 descriptors, one kept per batch by either worker passes 256.
BATCHES = 200
SAMPLE_EVERY = 50
CLOSE_TIMEOUT_SECONDS = 120.0
WORKERS = ("processor", "controller")
#: The most the threads and descriptors of a worker may step up by: one more dequeue
#: thread with its pool (threads) and their connections (descriptors: on the embedded
#: backend six a thread, two SQLite databases with their WAL and shared-memory files).
THREAD_STEP = 4
DESCRIPTOR_STEP = 6 * THREAD_STEP + 8


@contextmanager
def role_process(role: str, env: dict[str, str], folder: Path) -> Iterator[psutil.Process]:
    """``billing <role>`` under the descriptor limit, killed when the block ends."""
    with (folder / f"{role}.log").open("wb") as log:
        process = subprocess.Popen(
            [str(BILLING), role],
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


def usage(process: psutil.Process) -> tuple[int, int]:
    """Open descriptors and threads of ``process`` and its children."""
    descriptors = threads = 0
    for each in (process, *process.children(recursive=True)):
        descriptors += each.num_fds()
        threads += each.num_threads()
    return descriptors, threads


def logs(folder: Path) -> str:
    return "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}"
        for path in sorted(folder.glob("*.log"))
    )


@pytest.mark.parametrize(
    "backend", ["embedded", pytest.param("azurite", marks=pytest.mark.azurite)]
)
def test_workers_stay_flat_over_hundreds_of_batches(
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

    with ExitStack() as stack:
        workers = {role: stack.enter_context(role_process(role, env, tmp_path)) for role in WORKERS}
        initiator = stack.enter_context(role_process("initiator", env, tmp_path))
        client = stack.enter_context(
            httpx.Client(
                base_url=url,
                headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "text/csv"},
                timeout=30.0,
            )
        )
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while not answers_healthz(url):
            assert time.monotonic() < deadline, logs(tmp_path)
            assert initiator.is_running(), logs(tmp_path)
            time.sleep(0.05)

        samples: dict[str, list[tuple[int, int]]] = {role: [] for role in WORKERS}
        batch_ids: list[str] = []
        for n in range(BATCHES):
            response = client.post("/batches", content=one_row_batch(n))
            assert response.status_code == 202, (n, response.status_code, response.text)
            batch_ids.append(response.json()["batch_id"])
            if n % SAMPLE_EVERY == SAMPLE_EVERY - 1:
                for role, process in workers.items():
                    samples[role].append(usage(process))

        # Wait for every batch to close (they close in about the order they arrived), then
        # take the last sample.
        deadline = time.monotonic() + CLOSE_TIMEOUT_SECONDS
        statuses: dict[str, str] = {}
        for batch_id in batch_ids:
            while (status := client.get(f"/batches/{batch_id}").json()["status"]) not in (
                FINAL_STATUSES
            ):
                assert time.monotonic() < deadline, logs(tmp_path)
                assert all(p.is_running() for p in workers.values()), logs(tmp_path)
                time.sleep(0.2)
            statuses[batch_id] = status
        for role, process in workers.items():
            samples[role].append(usage(process))

    print(f"{backend}: (descriptors, threads) after each {SAMPLE_EVERY} batches and at the end:")
    for role, taken in samples.items():
        print(f"  {role}: {taken}")
        first_fds, first_threads = taken[0]
        for fds, threads in taken[1:]:
            # A listener may start one more dequeue thread as a queue fills (with its
            # handlers' connections: a step of a dozen descriptors, once); a leak grows
            # with every batch, by hundreds over these.
            assert threads <= first_threads + THREAD_STEP, (role, taken)
            assert fds <= first_fds + DESCRIPTOR_STEP, (role, taken)
    assert set(statuses.values()) == {"completed"}, statuses
