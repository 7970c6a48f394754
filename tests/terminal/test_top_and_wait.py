"""``billing top`` and ``billing submit --wait`` in a pseudo-terminal, as a person runs them.

Against two deployments, each started as an operator would: the three roles as separate
processes (``billing initiator``, ``billing processor --processes 1``, ``billing
controller``), and ``billing serve --all-in-one``. Embedded storage, a SQLite warehouse.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from billing.demo.cluster import Cluster, free_port
from billing.sample_batches import write_batch_file
from processor.worker import HEARTBEAT_BUSY_SECONDS
from tests.support.deployment_settings import billing_environment, deployment_values
from tests.terminal.terminal import Terminal

#: The console script, as a person types it (whichever package holds the commands).
BILLING = [str(Path(sys.executable).with_name("billing"))]
TRANSACTIONS = 20_000
CHUNK_SIZE = 100
CHUNKS = TRANSACTIONS // CHUNK_SIZE
DRAW_SECONDS = 30.0
BATCH_ID = r"\d{8}-\d{6}-[0-9a-f]{12}"
COMPLETE_SECONDS = 180.0


@dataclass(frozen=True)
class Deployment:
    base_url: str
    api_key: str
    env: dict[str, str]
    folder: Path

    def command(self, *args: str) -> list[str]:
        return [*BILLING, *args, "--url", self.base_url, "--api-key", self.api_key]


@pytest.fixture(scope="module", params=["roles", "all-in-one"])
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp(f"terminal-{request.param}")
    port, key = free_port(), secrets.token_urlsafe(16)
    values = deployment_values(
        folder,
        warehouse_url=f"sqlite:///{folder / 'warehouse.sqlite3'}",
        api_keys=key,
        port=port,
        chunk_size=CHUNK_SIZE,
        partitions=2,
        scaling_rule="0:1,40:2,150:3",
        max_dequeue_threads=3,
        backoff_max_idle_ms=300,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= billing_environment(values)
    cluster = Cluster(env=env, logs=folder / "logs")
    try:
        if request.param == "roles":
            cluster.start("controller")
            cluster.start("processor", "--processes", "1")
            cluster.start("initiator")
        else:
            cluster.start("serve", "--all-in-one")
        base_url = f"http://127.0.0.1:{port}"
        cluster.wait_healthy(base_url)
        yield Deployment(base_url, key, env, folder)
    finally:
        cluster.stop()


def latest_frame(text: str) -> str:
    """What ``billing top`` drew last: from its last header on."""
    return text[text.rfind("billing top") :]


def test_submit_wait_shows_upload_and_processing_then_the_reconciliation(
    deployment: Deployment,
) -> None:
    batch = deployment.folder / "wait.csv"
    write_batch_file(batch, TRANSACTIONS, customers=200, seed=3, file_format="csv")
    size = batch.stat().st_size
    submit = Terminal(
        deployment.command("submit", str(batch), "--wait"), deployment.env, columns=80
    )
    try:
        assert submit.wait(COMPLETE_SECONDS) == 0, submit.text()[-3000:]
    finally:
        submit.close()
    text = submit.text()
    # At 80 columns the status URL goes whole onto a line that fits, rather than on a longer
    # line the terminal would cut inside the batch id.
    batch_id = re.search(r"\d{8}-\d{6}-[0-9a-f]{12}", text)
    assert batch_id, text[:2000]
    url_lines = [line for line in text.splitlines() if f"/batches/{batch_id[0]}" in line]
    assert url_lines, text[:2000]
    assert all(len(line.strip()) <= 80 for line in url_lines), url_lines
    assert re.search(rf"upload .*100% {size / 1e6:.1f}/{size / 1e6:.1f} MB", text), text[:2000]
    assert f"{CHUNKS}/{CHUNKS} chunks" in text
    assert "tx/s · completed" in text
    assert re.search(r"reconciled\s*│\s*yes", text)
    assert f"transactions (control / warehouse) │ {TRANSACTIONS:,} / {TRANSACTIONS:,}" in text
    assert re.search(rf"throughput: [\d,]+ transactions/s end to end \({TRANSACTIONS:,} in ", text)


def test_top_draws_queues_processors_and_batches_and_quits_on_q(deployment: Deployment) -> None:
    top = Terminal(deployment.command("top"), deployment.env)
    try:
        host = socket.gethostname()
        text = top.read_until(
            lambda t: all(
                word in latest_frame(t) for word in ("Queue depth", "normal", "Processors", host)
            ),
            DRAW_SECONDS,
            "the queue and processor tables with a live processor",
        )
        assert "\x1b[?1049h" in top.raw.decode(errors="replace")  # its own screen, like top(1)
        frame = latest_frame(text)
        assert re.search(r"normal\s+\d+\s+\d+\s+\d+", frame)  # two partitions and the total
        assert "results" in frame
        assert "poison (all)" in frame
        # Each processor's peak of active threads since its previous beat, beside the count.
        assert re.search(r"instance\s+threads\s+peak\s+depth", frame), frame

        batch = deployment.folder / "top.csv"
        write_batch_file(batch, TRANSACTIONS, customers=200, seed=4, file_format="csv")
        submit = Terminal(deployment.command("submit", str(batch)), deployment.env)
        try:
            assert submit.wait(60) == 0, submit.text()
            batch_id = submit.text().split()[0]
        finally:
            submit.close()
        top.read_until(
            lambda t: (
                batch_id in latest_frame(t)
                and re.search(rf"completed\s+━+\s+{CHUNKS}/0/{CHUNKS}", latest_frame(t)) is not None
            ),
            COMPLETE_SECONDS,
            f"batch {batch_id} completed with all its chunks",
        )

        top.send(b"q")
        assert top.wait(10) == 0
        assert "\x1b[?1049l" in top.raw.decode(errors="replace")  # the screen given back
    finally:
        top.close()


def test_top_quits_on_ctrl_c(deployment: Deployment) -> None:
    top = Terminal(deployment.command("top"), deployment.env)
    try:
        top.read_until(lambda t: "Processors" in t, DRAW_SECONDS, "the first view")
        top.send(b"\x03")
        assert top.wait(10) == 0, top.text()[-2000:]
    finally:
        top.close()


def test_top_with_a_wrong_key_says_so_and_exits_1(deployment: Deployment) -> None:
    args = [*BILLING, "top", "--url", deployment.base_url, "--api-key", "not-the-key"]
    top = Terminal(args, deployment.env)
    try:
        assert top.wait(30) == 1
    finally:
        top.close()
    assert "answered 401 Unauthorized" in top.text()
    assert "pass --api-key or set BILLING_API_KEY" in top.text()
    assert "Traceback" not in top.text()


def test_top_once_prints_one_view_for_a_script(deployment: Deployment) -> None:
    done = subprocess.run(
        deployment.command("top", "--once"),
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Queue depth" in done.stdout
    assert "\x1b[" not in done.stdout  # not a terminal: no live view, no colours
    assert done.stdout.count("billing top") == 1


def test_top_says_when_the_initiator_cannot_be_reached_and_still_quits_on_q() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    top = Terminal([*BILLING, "top", "--url", nowhere, "--api-key", "k"], env)
    try:
        top.read_until(
            lambda t: "cannot reach the initiator" in t and "retrying" in t,
            DRAW_SECONDS,
            "the connection error",
        )
        top.send(b"q")
        assert top.wait(10) == 0
    finally:
        top.close()


def test_the_processors_report_what_they_rated_and_their_requests(deployment: Deployment) -> None:
    """The figures top and the charts take from the processors' heartbeats: with separate
    role processes the processor's requests reach the initiator only that way."""
    client = httpx.Client(
        base_url=deployment.base_url,
        headers={"Authorization": f"Bearer {deployment.api_key}"},
        timeout=30,
    )
    with client:
        before = settled_rated(client)
        batch = deployment.folder / "rated.csv"
        write_batch_file(batch, TRANSACTIONS, customers=200, seed=6, file_format="csv")
        with batch.open("rb") as body:
            accepted = client.post("/batches", content=body, headers={"Content-Type": "text/csv"})
        assert accepted.status_code == 202, accepted.text
        deadline = time.monotonic() + COMPLETE_SECONDS
        deleted_per_minute = 0.0
        rated = 0
        while time.monotonic() < deadline:
            view = live(client)
            rated = sum(
                p["rated_transactions"] - before.get(p["instance"], 0) for p in view["processors"]
            )
            # Only processors delete work items: these requests came from their heartbeats
            # (or, all in one process, from the shared meter).
            for sample in view["samples"]:
                deleted_per_minute = max(
                    deleted_per_minute, sample["requests_per_minute"].get("queue.delete", 0)
                )
            if rated >= TRANSACTIONS and deleted_per_minute > 0:
                break
            time.sleep(0.5)
        assert rated == TRANSACTIONS
        assert deleted_per_minute > 0


def settled_rated(client: httpx.Client) -> dict[str, int]:
    """Each processor's rated count once its heartbeat has caught up with its work.

    A busy processor writes its heartbeat every ``HEARTBEAT_BUSY_SECONDS``, so right after an
    earlier test's batch the figure can be one beat behind what it rated: wait until it holds
    still for longer than a beat.
    """

    def rated() -> dict[str, int]:
        return {p["instance"]: p["rated_transactions"] for p in live(client)["processors"]}

    seen, since = rated(), time.monotonic()
    deadline = since + COMPLETE_SECONDS
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = rated()
        if now != seen:
            seen, since = now, time.monotonic()
        elif seen and time.monotonic() - since > HEARTBEAT_BUSY_SECONDS + 2:
            return seen
    raise AssertionError(f"the processors' rated counts never settled: {seen}")


def live(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/dashboard/live")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_submit_wait_in_a_script_keeps_stdout_to_the_batch_id(deployment: Deployment) -> None:
    batch = deployment.folder / "script.csv"
    write_batch_file(batch, 2_000, customers=50, seed=8, file_format="csv")
    done = subprocess.run(
        deployment.command("submit", str(batch), "--wait"),
        env=deployment.env,
        capture_output=True,
        text=True,
        timeout=COMPLETE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [batch_id] = done.stdout.split()  # what a script captures: the id, nothing else
    assert batch_id in done.stderr
    assert "20/20 chunks" in done.stderr  # the bars' last state, printed once
    assert re.search(r"reconciled\s*│\s*yes", done.stderr)
    assert "\x1b[" not in done.stderr  # no terminal: no cursor tricks in a log


def test_top_once_and_invoices_fit_80_columns_and_come_whole_through_a_pipe(
    deployment: Deployment,
) -> None:
    batch = deployment.folder / "narrow.csv"
    write_batch_file(batch, 2_000, customers=50, seed=9, file_format="csv")
    submit = Terminal(deployment.command("submit", str(batch), "--wait"), deployment.env)
    try:
        assert submit.wait(COMPLETE_SECONDS) == 0, submit.text()[-3000:]
    finally:
        submit.close()
    found = re.search(BATCH_ID, submit.text())
    assert found is not None, submit.text()
    batch_id = found[0]

    env = {k: v for k, v in deployment.env.items() if k not in ("COLUMNS", "LINES")}
    for args in (("top", "--once"), ("invoices", batch_id)):
        narrow = Terminal(deployment.command(*args), env, columns=80)
        try:
            assert narrow.wait(60) == 0, narrow.text()
        finally:
            narrow.close()
        text = narrow.text()
        assert "…" not in text, text  # no cell cut short
        assert all(len(line) <= 80 for line in text.splitlines()), text
        if args[0] == "top":  # the batches the sampler has read so far: ids whole
            assert re.search(rf"{BATCH_ID}\s+completed\s+\d+/0/\d+", text), text
        else:
            assert batch_id in text
            assert re.search(r"cust-9-\d{6}\s", text), text  # customer ids whole

        piped = subprocess.run(
            deployment.command(*args),
            env=env,  # no COLUMNS: a pipe has no width
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert piped.returncode == 0, piped.stderr
        assert "…" not in piped.stdout, piped.stdout
        assert re.search(BATCH_ID, piped.stdout), piped.stdout
        if args[0] == "top":  # every column, none left out for a width
            assert re.search(r"instance\s+threads\s+peak\s+depth\s+in flight", piped.stdout)
