"""``billing submit --via-upload``: the file goes to storage in blocks, then the initiator
takes it from there (docs/uploads.md).

1. ``POST /uploads`` for a grant (a write-only URL of one blob), unless an earlier run on
   the same file left one that has not expired (the resume file, under the user's cache).
2. The Azure SDK's ``BlobClient.from_blob_url`` stages the blocks in parallel (``Put
   Block``, each retried by the SDK's own policy), then commits them (``Put Block List``).
   Each block stored is written down in the resume file, so a second run stages only the
   blocks the first did not: an interrupted upload resumes. (Storage keeps uncommitted
   blocks for a week; the grant is write-only, so the client cannot ask storage which
   blocks it holds, and remembers instead. If storage lost them after all, the commit is
   refused and every block is sent again.)
3. ``POST /batches`` with ``{"upload": blob}``.

The same calls work on every backend: the grant's URL is a SAS on Azure storage and
Azurite, and the initiator's own Azure-compatible route on the embedded backend.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobBlock, BlobClient

from shared.contracts.batch_records import utc_now

#: AzCopy's default block; 8 MiB x 4 in flight bounds what the client holds.
BLOCK_BYTES = 8 * 1024 * 1024
PARALLEL_BLOCKS = 4


@dataclass(frozen=True)
class Uploaded:
    blob: str
    blocks: int
    blocks_sent: int
    """The blocks this run stored; the others were stored by an earlier run."""


@dataclass
class PendingUpload:
    """What a later run needs to resume: the grant, the file it is for, how far it got."""

    upload_url: str
    blob: str
    expires_at: str
    file_size: int
    file_mtime_ns: int
    staged: list[int] = field(default_factory=list)
    """Indexes of the blocks stored so far."""
    committed: bool = False

    def fits(self, file: Path) -> bool:
        stat = file.stat()
        fresh = datetime.fromisoformat(self.expires_at) > utc_now()
        return fresh and (stat.st_size, stat.st_mtime_ns) == (self.file_size, self.file_mtime_ns)


def resume_file(file: Path) -> Path:
    """Where the pending upload of ``file`` is remembered (one per absolute path)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:24]
    return cache / "billing" / "uploads" / f"{key}.json"


def pending_upload(client: httpx.Client, file: Path) -> PendingUpload:
    """The upload an earlier run left for this file, or a new grant."""
    path = resume_file(file)
    if path.exists():
        try:
            pending = PendingUpload(**json.loads(path.read_text()))
            if pending.fits(file):
                return pending
        except (ValueError, TypeError):
            pass  # unreadable: ask for a new grant
    answer = client.post("/uploads").raise_for_status().json()
    stat = file.stat()
    pending = PendingUpload(
        upload_url=str(client.base_url.join(answer["upload_url"])),
        blob=answer["blob"],
        expires_at=answer["expires_at"],
        file_size=stat.st_size,
        file_mtime_ns=stat.st_mtime_ns,
    )
    remember(file, pending)
    return pending


def remember(file: Path, pending: PendingUpload) -> None:
    path = resume_file(file)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(pending)))


def forget(file: Path) -> None:
    resume_file(file).unlink(missing_ok=True)


def block_id(index: int) -> str:
    return f"{index:06d}"


def upload_file(
    client: httpx.Client,
    file: Path,
    *,
    block_bytes: int = BLOCK_BYTES,
    parallel: int = PARALLEL_BLOCKS,
    on_block: Callable[[int], None] | None = None,
    **blob_client_options: Any,
) -> Uploaded:
    """Upload ``file`` (resuming an earlier run's blocks); its blob's name, and what was sent.

    ``on_block`` is called with each block's size once it is stored (or was, by an earlier
    run).
    ``blob_client_options`` go to the SDK's ``BlobClient`` (a transport, retry settings).
    """
    pending = pending_upload(client, file)
    if pending.committed:
        return Uploaded(pending.blob, blocks=0, blocks_sent=0)
    blob = BlobClient.from_blob_url(pending.upload_url, **blob_client_options)
    size = pending.file_size
    count = -(-size // block_bytes)  # an empty file commits no block: an empty blob
    ids = [block_id(index) for index in range(count)]
    lock = threading.Lock()

    def expected(index: int) -> int:
        return min(block_bytes, size - index * block_bytes)

    def stage(index: int) -> None:
        with file.open("rb") as source:
            source.seek(index * block_bytes)
            data = source.read(expected(index))
        blob.stage_block(ids[index], data, length=len(data))
        with lock:
            pending.staged.append(index)
            remember(file, pending)
        if on_block is not None:
            on_block(len(data))

    def stage_all(missing: list[int]) -> None:
        with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="upload") as pool:
            futures = [pool.submit(stage, index) for index in missing]
            try:
                for future in futures:
                    future.result()  # the first block that failed for good stops the run
            except BaseException:
                pool.shutdown(cancel_futures=True)
                raise

    done = set(pending.staged) & set(range(count))
    missing = [index for index in range(count) if index not in done]
    if on_block is not None:
        for index in done:
            on_block(expected(index))
    stage_all(missing)
    try:
        blob.commit_block_list([BlobBlock(block_id) for block_id in ids])
    except HttpResponseError as error:
        if error.status_code != 400 or not done:
            raise
        # Blocks an earlier run stored are gone (storage drops them after a week): all again.
        pending.staged.clear()
        missing = list(range(count))
        stage_all(missing)
        blob.commit_block_list([BlobBlock(block_id) for block_id in ids])
    pending.committed = True
    remember(file, pending)
    return Uploaded(pending.blob, blocks=count, blocks_sent=len(missing))
