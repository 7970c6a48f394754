"""The storage-request meter: every request to storage or the bus, counted by kind.

On Azure every storage request is billed, every empty queue poll included. So
the backends count at the transport: the Azure backends through an azure-core pipeline
policy (:class:`MeterPolicy`, one count per HTTP request the SDK really sends, retries
included), the embedded backend once per operation. Counts are per process; the CLI and
``/metrics`` export them, benchmarks diff two snapshots.

Requests made on behalf of an onlooker rather than the pipeline (the dashboard's depth
queries) are made inside :func:`on_behalf_of`: their kind carries the caller after an
``@`` (``queue.count@dashboard``), so charts label them and reports can set them apart.

Blob requests are also counted by the container they target (:func:`container_snapshot`):
what each role reads and writes where, which its role assignments are scoped to
(``tests/infra/test_least_privilege.py``).
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse, urlsplit

from azure.core.pipeline import PipelineRequest
from azure.core.pipeline.policies import SansIOHTTPPolicy

#: The "container" of a blob request to the service itself (a user delegation key, the list
#: of containers): only an assignment on the whole account covers those.
ACCOUNT = ""

_lock = threading.Lock()
_counts: Counter[str] = Counter()
_containers: Counter[tuple[str, str]] = Counter()
_Key = TypeVar("_Key")
_caller: ContextVar[str | None] = ContextVar("billing_meter_caller", default=None)


@contextmanager
def on_behalf_of(caller: str) -> Iterator[None]:
    """Count the requests made in this block as ``service.op@caller``."""
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


def record(service: str, op: str, n: int = 1, *, container: str = ACCOUNT) -> None:
    """Count ``n`` requests of kind ``service.op`` (e.g. ``queue.get``, ``blob.put``), with
    ``@caller`` when made :func:`on_behalf_of` one; a blob request also under its
    ``container`` (left out, the account: the widest need, so a forgotten one shows)."""
    caller = _caller.get()
    kind = f"{service}.{op}" if caller is None else f"{service}.{op}@{caller}"
    with _lock:
        _counts[kind] += n
        if service == "blob":
            _containers[kind, container] += n


def request_kind(kind: str) -> str:
    """The kind without its caller: ``queue.count@dashboard`` → ``queue.count``."""
    return kind.partition("@")[0]


def caller_of(kind: str) -> str | None:
    """The caller a kind was counted for, or None for the pipeline's own requests."""
    return kind.partition("@")[2] or None


def snapshot() -> dict[str, int]:
    """A copy of the counts so far, e.g. ``{"queue.get": 12, "blob.put": 3}``."""
    with _lock:
        return dict(_counts)


def container_snapshot() -> dict[tuple[str, str], int]:
    """A copy of the blob counts by (kind, container), e.g. ``{("blob.get", "payloads"): 4}``;
    :data:`ACCOUNT` for requests to the blob service itself."""
    with _lock:
        return dict(_containers)


def total(counts: Mapping[str, int] | None = None, prefix: str = "") -> int:
    """Sum of the counts (of a snapshot, or the live ones) whose kind starts with ``prefix``."""
    source = snapshot() if counts is None else counts
    return sum(v for k, v in source.items() if k.startswith(prefix))


def diff(after: Mapping[_Key, int], before: Mapping[_Key, int]) -> dict[_Key, int]:
    """What happened between two snapshots, without the kinds that did not move."""
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def reset() -> None:
    with _lock:
        _counts.clear()
        _containers.clear()


def classify(service: str, method: str, url: str) -> str:
    """Name the kind of an Azure Storage REST request from its method and URL."""
    parsed = urlparse(url)
    query = parsed.query.lower()
    path = parsed.path.rstrip("/")
    if service == "queue":
        if path.endswith("/messages"):
            if method == "POST":
                return "put"
            if method == "GET":
                return "peek" if "peekonly=true" in query else "get"
            return "clear" if method == "DELETE" else "admin"
        if "/messages/" in path:
            return {"DELETE": "delete", "PUT": "update"}.get(method, "admin")
        if method == "GET" and "comp=metadata" in query:
            return "count"
        return "admin"
    if service == "blob":
        if "comp=list" in query:
            return "list"
        return {"PUT": "put", "GET": "get", "HEAD": "head", "DELETE": "delete"}.get(method, "admin")
    if service == "table":
        return "read" if method == "GET" else "write"
    return method.lower()


def container_of(url: str) -> str:
    """The container a blob service URL targets, or :data:`ACCOUNT` for the service itself.

    Azure names the account in the host (``<account>.blob.core.windows.net/<container>/…``,
    private endpoints and other clouds alike); an emulator's endpoints name it first in
    the path (``127.0.0.1:10000/<account>/<container>/…``).
    """
    parts = urlsplit(url)
    segments = parts.path.split("/", 3)  # "", then the container (or the account), …
    index = 1 if ".blob." in parts.netloc else 2
    return segments[index] if len(segments) > index else ACCOUNT


class MeterPolicy(SansIOHTTPPolicy):  # type: ignore[type-arg]
    """An azure-core policy that counts each HTTP request a storage client sends.

    It sits in the per-retry part of the pipeline, so a retried request counts again, as it
    is billed again.
    """

    def __init__(self, service: str) -> None:
        self._service = service

    def on_request(self, request: PipelineRequest[Any]) -> None:
        http = request.http_request
        op = classify(self._service, http.method, http.url)
        if self._service == "blob":
            record("blob", op, container=container_of(http.url))
        else:
            record(self._service, op)


#: When set, each process writes its counts there as it runs and as it exits (``billing
#: demo`` sums them, at the batch's start and close and at the end).
EXPORT_DIR_ENV = "BILLING_METER_EXPORT_DIR"
#: While it runs, a process rewrites its export this often: a reader of the folder sees
#: every process's counts as of at most this long ago.
EXPORT_EVERY_SECONDS = 0.5

_exporting_pid: int | None = None


#: The subfolder of the export folder where each process writes its blob counts by
#: container (``{kind: {container: n}}``), beside its counts by kind.
CONTAINERS_SUBDIR = "containers"


def export_now() -> None:
    """Write this process's counts to ``$BILLING_METER_EXPORT_DIR/<pid>.json`` and its blob
    counts by container to ``…/containers/<pid>.json``, if set."""
    folder = os.environ.get(EXPORT_DIR_ENV)
    if folder:
        name = f"{os.getpid()}.json"
        by_container: dict[str, dict[str, int]] = {}
        for (kind, container), n in container_snapshot().items():
            by_container.setdefault(kind, {})[container] = n
        _write(Path(folder) / CONTAINERS_SUBDIR / name, by_container)
        _write(Path(folder) / name, snapshot())


def _write(path: Path, counts: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a reader never sees half a file.
    part = path.with_suffix(".part")
    part.write_text(json.dumps(counts), encoding="utf-8")
    os.replace(part, path)


def export_at_exit() -> None:
    """Export the counts every :data:`EXPORT_EVERY_SECONDS` and when the process exits
    normally.

    A process killed by a signal skips ``atexit``; uvicorn re-raises the SIGTERM it
    handled (``billing initiator`` turns that into a normal exit), so the initiator's app
    also exports from its lifespan's shutdown, wherever it is served.
    """
    global _exporting_pid
    if not os.environ.get(EXPORT_DIR_ENV) or _exporting_pid == os.getpid():
        return
    _exporting_pid = os.getpid()  # a forked child starts its own thread
    atexit.register(export_now)
    threading.Thread(target=_export_periodically, name="meter-export", daemon=True).start()


def _export_periodically() -> None:
    while True:
        time.sleep(EXPORT_EVERY_SECONDS)
        try:
            export_now()
        except OSError:  # the folder is being removed as the run ends
            return


def collect_exports(folder: Path) -> dict[str, int]:
    """The sum of every process's exported counts in ``folder``."""
    merged: Counter[str] = Counter()
    for path in folder.glob("*.json"):
        merged.update(json.loads(path.read_text(encoding="utf-8")))
    return dict(merged)


def collect_container_exports(folder: Path) -> dict[tuple[str, str], int]:
    """The sum of every process's exported blob counts by (kind, container) in ``folder``."""
    merged: Counter[tuple[str, str]] = Counter()
    for path in (folder / CONTAINERS_SUBDIR).glob("*.json"):
        for kind, counts in json.loads(path.read_text(encoding="utf-8")).items():
            merged.update({(kind, container): n for container, n in counts.items()})
    return dict(merged)
