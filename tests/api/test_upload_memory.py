"""The initiator's memory while it takes a batch by upload: bounded, whatever the file's size.

Each test runs a fresh ``billing initiator`` process (embedded backend) and samples its RSS,
children included (the intake helpers):

- the intake of a blob written straight to storage peaks no higher than the intake of the
  same file as a body, plus a margin well below the file's size, so that an initiator that
  read the blob whole would fail (``BILLING_TEST_UPLOAD_MB``, default 16);
- the embedded backend's upload route holds none of the blocks it is sent: each is spooled
  to a temporary file;
- a 1 GB file, uploaded (through that route, or to Azurite with the grant's SAS) and then
  taken with ``POST /batches {"upload": …}``, adds no more than the intake's memory budget
  (``bench.intake.INTAKE_MEMORY_BUDGET_MB``) to what the initiator holds idle
  (``BILLING_TEST_LARGE_UPLOAD_GB``, default 1). ``python -m bench.upload`` times the same
  against a body.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from bench.in_process import API_KEY
from bench.intake import (
    BYTES_PER_LINE,
    INTAKE_MEMORY_BUDGET_MB,
    RssSampler,
    RunningInitiator,
    idle_rss,
    post_file,
    process_rss,
)
from billing.cli.uploader import BLOCK_BYTES as BLOCK
from billing.cli.uploader import upload_file
from billing.sample_batches import generate_lines, write_batch_file
from shared.storage.embedded import EmbeddedStorageAccount
from tests.support.azurite import running_azurite

SIZE_MB = float(os.environ.get("BILLING_TEST_UPLOAD_MB", "16"))
#: The large file's size: the issue's 1 GB by default, smaller for a quick local run.
LARGE_GB = float(os.environ.get("BILLING_TEST_LARGE_UPLOAD_GB", "1"))
#: The large file repeats one generated round of lines, each round with its own ids.
ROUND_LINES = 65_536


def test_the_intake_of_an_upload_peaks_no_higher_than_that_of_a_body(tmp_path: Path) -> None:
    transactions = int(SIZE_MB * 1e6 / BYTES_PER_LINE)
    path = tmp_path / "batch.csv"
    write_batch_file(path, transactions, customers=2000, seed=5)
    size = path.stat().st_size

    with RunningInitiator(tmp_path / "body") as (url, process), RssSampler(process) as body:
        assert post_file(url, path)["transactions"] == transactions
    with (
        RunningInitiator(tmp_path / "upload") as (url, process),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}) as client,
    ):
        # Written to storage from here, as a sender writes to Azure storage: the
        # initiator's own upload route (embedded backend only) plays no part in the figure.
        blob = client.post("/uploads").json()["blob"]
        incoming = EmbeddedStorageAccount(tmp_path / "upload" / "storage").container("incoming")
        ids: list[str] = []
        with path.open("rb") as source:
            while data := source.read(BLOCK):
                ids.append(f"{len(ids):06d}")
                incoming.stage_block(blob, ids[-1], data)
        incoming.commit_blocks(blob, ids)
        with RssSampler(process) as intake:
            taken = client.post("/batches", json={"upload": blob}, timeout=None)
        assert taken.status_code == 202, taken.text

    print(
        f"peak RSS: body {body.peak / 1e6:.0f} MB, intake of the upload {intake.peak / 1e6:.0f} MB"
    )
    assert intake.peak <= body.peak + size / 2


#: Blocks sent at once to the upload route, and their size: what an initiator that held
#: each block it is sent would hold at once (AzCopy sends many blocks in parallel).
PARALLEL_BLOCKS = 4
ROUTE_BLOCK_BYTES = 32 * 1024 * 1024


def test_the_upload_route_holds_none_of_the_blocks_it_is_sent(tmp_path: Path) -> None:
    block = os.urandom(ROUTE_BLOCK_BYTES)
    with (
        RunningInitiator(tmp_path / "route") as (url, process),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}) as client,
    ):

        def upload() -> None:
            grant_url = client.base_url.join(client.post("/uploads").json()["upload_url"])

            def put_block(index: int) -> None:
                block_id = base64.b64encode(f"{index:06d}".encode()).decode()
                answer = httpx.put(
                    grant_url.copy_merge_params({"comp": "block", "blockid": block_id}),
                    content=block,
                    timeout=120,
                )
                assert answer.status_code == 201, answer.text

            with ThreadPoolExecutor(PARALLEL_BLOCKS) as senders:
                list(senders.map(put_block, range(PARALLEL_BLOCKS)))

        upload()  # the first upload: what the server keeps once it has served one
        before = process_rss(process)
        with RssSampler(process) as sampled:
            upload()

    added = sampled.peak - before
    print(f"the upload route added {added / 1e6:.1f} MB for {PARALLEL_BLOCKS} blocks in flight")
    assert added < ROUTE_BLOCK_BYTES


@pytest.fixture(scope="module")
def large_csv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("large") / "large.csv"
    return path, _large_csv(path, int(LARGE_GB * 1e9))


@pytest.mark.parametrize("backend", ["embedded", "azurite"])
def test_a_1gb_upload_is_taken_within_the_intake_memory_budget(
    backend: str, large_csv: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, transactions = large_csv
    # The uploader's resume files, which name the file: each run starts an upload of its own.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with (
        _storage(backend) as env,
        RunningInitiator(tmp_path / "large", env) as (url, process),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}) as client,
    ):
        idle = idle_rss(process)
        with RssSampler(process) as sampled:
            uploaded = upload_file(client, path)
            taken = client.post("/batches", json={"upload": uploaded.blob}, timeout=None)
        assert taken.status_code == 202, taken.text
        assert taken.json()["transactions"] == transactions

    added_mb = (sampled.peak - idle) / 1e6
    print(
        f"{backend}: {path.stat().st_size / 1e9:.2f} GB, {transactions:,} transactions: idle "
        f"{idle / 1e6:.0f} MB, the upload and its intake added {added_mb:.0f} MB"
    )
    assert added_mb <= INTAKE_MEMORY_BUDGET_MB


@contextlib.contextmanager
def _storage(backend: str) -> Iterator[dict[str, str]]:
    """The initiator's storage settings: the embedded backend, or an Azurite of its own (a
    gigabyte in the suite's shared one would weigh on every later test)."""
    if backend == "embedded":
        yield {}
        return
    with running_azurite() as info:
        yield {"BILLING_STORAGE_CONNECTION_STRING": info.connection_string}


def _large_csv(path: Path, size: int) -> int:
    """A CSV of about ``size`` bytes, fast to write: one generated round of lines again and
    again, each round's transaction ids renamed so that the batch's stay unique. Returns
    how many transactions it holds."""
    header, *lines = generate_lines(ROUND_LINES, customers=20_000, seed=7)
    one_round = "".join(lines)
    rounds = max(1, size // len(one_round.encode()))
    with path.open("w") as out:
        out.write(header)
        for number in range(rounds):
            out.write(one_round.replace("tx-7-", f"tx-{number}-"))
    return rounds * ROUND_LINES
