"""Taking an uploaded file holds no more of it in the initiator than taking a body does.

Both paths of one file, each through a fresh ``billing initiator`` process (embedded
backend), its RSS sampled (children included: the intake helpers) while it takes the batch:
the whole POST of the body, and the ``POST /batches {"upload": …}`` of a blob written
straight to the backend's storage. The
body path is what ``bench.intake`` holds to its 1 GB memory target; the intake of the
upload must peak no higher than it plus a margin well below the file's size, so that an
initiator that read the blob whole would fail. (The embedded backend's upload route holds
each block it is sent in a temporary file, not in memory: the second test holds it to that;
``bench.upload`` reports the whole upload path's peak.) The size is small for CI
(``BILLING_TEST_UPLOAD_MB``, default 16); ``python -m bench.upload`` runs 1 GB.
"""

from __future__ import annotations

import base64
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.intake import (
    API_KEY,
    BYTES_PER_LINE,
    RssSampler,
    RunningInitiator,
    post_file,
    process_rss,
)
from billing.cli.uploader import BLOCK_BYTES as BLOCK
from billing.sample_batches import write_batch_file
from shared.storage.embedded import EmbeddedStorageAccount

SIZE_MB = float(os.environ.get("BILLING_TEST_UPLOAD_MB", "16"))


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
