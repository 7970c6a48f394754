"""Uploads straight to storage: a grant, the file uploaded with the Azure SDK, then
``POST /batches`` with ``{"upload": blob}`` (docs/uploads.md).

On both backends, through a real socket (the SDK speaks HTTP to the grant's URL: Azurite's
blob service with a SAS, or the embedded backend's route on the initiator): the file is
taken by the same intake as a body, its blob deleted after; a bad file is rejected with
line numbers and leaves nothing; an expired grant writes nothing; a used upload is never
taken twice; an interrupted upload resumes with only the blocks it lacks.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobClient

from billing.cli.uploader import resume_file, upload_file
from initiator.uploads.sweep import sweep_uploads
from shared.settings import Settings
from shared.storage import open_storage
from tests.api.batch_files import csv_file, row, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import AUTH
from tests.support.live_initiator import LiveInitiator, serving

#: Blocks this small make a small file several blocks (resume has something to skip).
BLOCK = 1024


@pytest.fixture(autouse=True)
def _resume_files_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def live(settings: Settings) -> Iterator[LiveInitiator]:
    with serving(settings) as started:
        yield started


@pytest.fixture
def client(live: LiveInitiator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.base_url, headers=AUTH, timeout=30) as opened:
        yield opened


def incoming(settings: Settings) -> list[str]:
    storage = open_storage(settings)
    try:
        return [blob.name for blob in storage.container(settings.upload_container).list()]
    finally:
        storage.close()


def submit(client: httpx.Client, blob: str, **headers: str) -> httpx.Response:
    return client.post("/batches", json={"upload": blob}, headers=headers)


def test_an_uploaded_file_is_taken_once_and_its_blob_deleted(
    client: httpx.Client, settings: Settings, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(50)))
    uploaded = upload_file(client, file, block_bytes=BLOCK)
    assert uploaded.blocks > 1

    accepted = submit(client, uploaded.blob)

    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["transactions"] == 50
    assert incoming(settings) == []
    again = submit(client, uploaded.blob)
    assert again.status_code == 409
    assert again.json()["type"] == "urn:billing:problem:upload-used"


def test_a_retry_with_the_same_idempotency_key_gets_the_same_batch(
    client: httpx.Client, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(5)))
    blob = upload_file(client, file).blob

    first = submit(client, blob, **{"Idempotency-Key": "upload-retry"})
    retried = submit(client, blob, **{"Idempotency-Key": "upload-retry"})

    assert (first.status_code, retried.status_code) == (202, 200)
    assert retried.json()["batch_id"] == first.json()["batch_id"]


def test_a_bad_uploaded_file_is_rejected_by_line_and_leaves_nothing(
    client: httpx.Client, settings: Settings, tmp_path: Path
) -> None:
    file = tmp_path / "bad.csv"
    file.write_bytes(csv_file([row(0), row(1), row(2, quantity="0"), row(3, sku="NOPE")]))
    blob = upload_file(client, file, block_bytes=BLOCK).blob

    rejected = submit(client, blob)

    assert rejected.status_code == 422, rejected.text
    assert [p["line"] for p in rejected.json()["problems"]] == [4, 5]
    assert incoming(settings) == []
    storage = open_storage(settings)
    try:
        assert list(storage.container(settings.payload_container).list()) == []
    finally:
        storage.close()
    assert submit(client, blob).status_code == 409  # spent: a fixed file needs a new grant


def test_an_upload_never_granted_or_never_written_is_refused(client: httpx.Client) -> None:
    assert submit(client, "20250101-000000-" + "0" * 32).status_code == 404
    blob = client.post("/uploads").json()["blob"]
    missing = submit(client, blob)
    assert missing.status_code == 409
    assert missing.json()["type"] == "urn:billing:problem:upload-missing"


def test_an_expired_grant_writes_nothing(make_settings: SettingsFactory, tmp_path: Path) -> None:
    settings = make_settings(upload_expiry_seconds=1)
    with serving(settings) as live, httpx.Client(base_url=live.base_url, headers=AUTH) as client:
        grant = client.post("/uploads").json()
        time.sleep(2.1)
        blob = BlobClient.from_blob_url(str(client.base_url.join(grant["upload_url"])))
        with pytest.raises(HttpResponseError) as refused:
            blob.stage_block("000000", b"late")
        assert refused.value.status_code == 403
        assert incoming(settings) == []
        storage = open_storage(settings)
        try:  # a grant whose expiry is older than the orphan age goes with the sweep
            assert sweep_uploads(storage, settings, older_than=timedelta(0)) == [grant["blob"]]
        finally:
            storage.close()
        assert submit(client, grant["blob"]).status_code == 404


def test_a_grant_reused_after_its_batch_took_the_upload_makes_no_second_batch(
    client: httpx.Client, settings: Settings, backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(5)))
    grant = client.post("/uploads").json()
    url = str(client.base_url.join(grant["upload_url"]))
    BlobClient.from_blob_url(url).upload_blob(file.read_bytes())
    assert submit(client, grant["blob"]).status_code == 202

    reused = BlobClient.from_blob_url(url)
    if backend == "embedded":  # the initiator's route refuses the write itself
        with pytest.raises(HttpResponseError) as refused:
            reused.upload_blob(file.read_bytes(), overwrite=True)
        assert refused.value.status_code == 403
    else:  # storage honours the SAS until it expires; no batch takes what it writes
        reused.upload_blob(file.read_bytes(), overwrite=True)
    assert submit(client, grant["blob"]).status_code == 409


def test_an_interrupted_upload_resumes_with_the_blocks_it_lacks(
    client: httpx.Client, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(200)))
    stored: list[int] = []

    def cut_after_three(size: int) -> None:
        stored.append(size)
        if len(stored) == 3:
            raise ConnectionResetError("the link dropped")

    with pytest.raises(ConnectionResetError):
        upload_file(client, file, block_bytes=BLOCK, parallel=1, on_block=cut_after_three)
    stored_before = len(json.loads(resume_file(file).read_text())["staged"])

    resumed = upload_file(client, file, block_bytes=BLOCK, parallel=1)

    assert 3 <= stored_before < resumed.blocks
    assert resumed.blocks_sent == resumed.blocks - stored_before
    accepted = submit(client, resumed.blob)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["transactions"] == 200


def test_the_sweep_removes_uploads_no_batch_took(
    client: httpx.Client, settings: Settings, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(5)))
    blob = upload_file(client, file).blob
    assert incoming(settings) == [blob]

    storage = open_storage(settings)
    try:
        assert sweep_uploads(storage, settings, older_than=timedelta(0)) == [blob]
    finally:
        storage.close()
    assert incoming(settings) == []
    assert submit(client, blob).status_code == 409  # nothing left to take


def test_block_ids_are_any_bytes_as_on_azure(client: httpx.Client) -> None:
    """Not every client's ids are text: AzCopy's hold a binary GUID."""
    grant = client.post("/uploads").json()
    url = httpx.URL(str(client.base_url.join(grant["upload_url"])))
    data = csv_file(rows(5))
    ids = [base64.b64encode(bytes([0xDB, 0xC8, index]) + bytes(33)).decode() for index in (0, 1)]
    half = len(data) // 2
    for block_id, part in zip(ids, (data[:half], data[half:]), strict=True):
        staged = httpx.put(
            url.copy_merge_params({"comp": "block", "blockid": block_id}), content=part
        )
        assert staged.status_code == 201, staged.text
    latest = "".join(f"<Latest>{block_id}</Latest>" for block_id in ids)
    committed = httpx.put(
        url.copy_merge_params({"comp": "blocklist"}),
        content=f'<?xml version="1.0" encoding="utf-8"?><BlockList>{latest}</BlockList>',
    )
    assert committed.status_code == 201, committed.text

    accepted = submit(client, grant["blob"])
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["transactions"] == 5


@pytest.mark.parametrize("method", ["HEAD", "GET"])
def test_a_grant_reads_nothing(client: httpx.Client, method: str) -> None:
    """Get Blob Properties and Get Blob are refused as storage refuses a write-only SAS
    (AzCopy reads the length after an upload, and takes this answer as "write-only")."""
    grant = client.post("/uploads").json()
    url = str(client.base_url.join(grant["upload_url"]))
    BlobClient.from_blob_url(url).upload_blob(csv_file(rows(5)))

    read = httpx.request(method, url)

    assert read.status_code == 403
    assert read.headers["x-ms-error-code"] == "AuthorizationPermissionMismatch"
