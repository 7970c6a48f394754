"""AzCopy as a client of the upload path: the command docs/uploads.md shows, run as is.

On both backends, through a real socket: ``azcopy copy <file> "<upload_url>"`` sends a file
of several blocks to the grant's URL (Azurite's blob service with an account-key SAS, or
the embedded backend's route on the initiator), then ``POST /batches {"upload": blob}``
takes it; a grant that expired, or whose upload a batch took already, makes AzCopy fail.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from azure.storage.blob import BlobClient

from shared.settings import Settings
from tests.api.batch_files import csv_file, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import AUTH
from tests.support.azcopy import AzCopy
from tests.support.live_initiator import serving

pytestmark = pytest.mark.usefixtures("azcopy")

#: About 2.3 MB of CSV: with blocks of 0.5 MiB, AzCopy sends five blocks and a block list.
TRANSACTIONS = 40_000
BLOCK_SIZE_MB = "0.5"
#: Chunks this large keep the intake of the file quick (the count is what is checked).
CHUNK_SIZE = 5_000


@pytest.fixture
def settings(make_settings: SettingsFactory) -> Settings:
    return make_settings(chunk_size=CHUNK_SIZE)


@pytest.fixture
def client(settings: Settings) -> Iterator[httpx.Client]:
    with (
        serving(settings) as live,
        httpx.Client(base_url=live.base_url, headers=AUTH, timeout=30) as opened,
    ):
        yield opened


def grant(client: httpx.Client) -> tuple[str, str]:
    """A grant's absolute URL (the embedded backend's is relative to the API) and blob."""
    answer = client.post("/uploads")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return str(client.base_url.join(body["upload_url"])), body["blob"]


def upload(azcopy: AzCopy, file: Path, url: str, scratch: Path) -> subprocess.CompletedProcess[str]:
    """The command of docs/uploads.md, with blocks small enough that a test file has several.

    ``--from-to LocalBlob``: AzCopy infers a blob destination from the host name
    (``*.blob.core.windows.net``), which neither Azurite's nor the initiator's has.
    """
    return azcopy.run(
        *("copy", str(file), url, "--from-to", "LocalBlob", "--block-size-mb", BLOCK_SIZE_MB),
        scratch=scratch,
    )


def test_azcopy_uploads_a_file_of_several_blocks_that_a_batch_takes(
    azcopy: AzCopy, client: httpx.Client, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(TRANSACTIONS)))
    assert file.stat().st_size > 4 * float(BLOCK_SIZE_MB) * 1024 * 1024
    url, blob = grant(client)

    copied = upload(azcopy, file, url, tmp_path / "azcopy")

    assert copied.returncode == 0, azcopy.log(tmp_path / "azcopy")
    accepted = client.post("/batches", json={"upload": blob})
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["transactions"] == TRANSACTIONS


def test_azcopy_fails_on_a_grant_whose_upload_a_batch_took(
    azcopy: AzCopy, client: httpx.Client, backend: str, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(5)))
    url, blob = grant(client)
    BlobClient.from_blob_url(url).upload_blob(file.read_bytes())
    assert client.post("/batches", json={"upload": blob}).status_code == 202

    again = upload(azcopy, file, url, tmp_path / "again")

    if backend == "embedded":  # the initiator's route refuses the write itself
        assert again.returncode != 0, again.stdout
    else:  # storage honours the SAS until it expires; no batch takes what it writes
        assert again.returncode == 0, azcopy.log(tmp_path / "again")
    assert client.post("/batches", json={"upload": blob}).status_code == 409


def test_azcopy_fails_on_an_expired_grant(
    azcopy: AzCopy, make_settings: SettingsFactory, tmp_path: Path
) -> None:
    file = tmp_path / "batch.csv"
    file.write_bytes(csv_file(rows(5)))
    settings = make_settings(upload_expiry_seconds=1)
    with serving(settings) as live, httpx.Client(base_url=live.base_url, headers=AUTH) as client:
        url, blob = grant(client)
        time.sleep(2.1)

        late = upload(azcopy, file, url, tmp_path / "azcopy")

        assert late.returncode != 0, late.stdout
        assert client.post("/batches", json={"upload": blob}).status_code == 409
