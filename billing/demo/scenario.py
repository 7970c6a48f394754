"""The demo's story: start the roles, submit a generated batch, wait, and report.

    generate 100,000 transactions → POST /batches → processors rate the chunks →
    the controller applies them → the batch completes and reconciles

It prints what a newcomer wants to see: the reconciliation, the top invoices, end-to-end
throughput, and how many storage requests the run cost per 1,000 transactions.
"""

from __future__ import annotations

import itertools
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import httpx

from billing.demo.cluster import Cluster, free_port
from billing.sample_batches import write_batch_file
from shared import meter
from shared.contracts.batch_status import FINAL_STATUSES

Backend = Literal["embedded", "azurite"]
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class DemoResult:
    batch_id: str
    transactions: int
    status: dict[str, Any]
    invoices: dict[str, Any]  # a page of GET /batches/{id}/invoices ordered by total
    seconds: float  # POST until the batch closed in the warehouse (see seconds_to_close)
    #: from the batch's submission to its close, the pipeline's own (no onlooker's)
    storage_requests: dict[str, int]
    status_polls: int = 0  # GET /batches/{id} while waiting, each a batch-record read
    intake_seconds: float = 0.0  # of ``seconds``: POST until its 202 (validated, queued)
    intake_cpu_seconds: float = 0.0  # the initiator process's CPU time over that span
    #: the requests made for onlookers in the same span (``queue.count@dashboard``: the
    #: dashboard's depth queries), reported apart
    onlooker_requests: dict[str, int] = field(default_factory=dict)
    #: Each role's CPU time (its processes and their children) from the POST to the close.
    role_cpu_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def reconciled(self) -> bool:
        return self.status.get("reconciled") is True

    @property
    def throughput(self) -> float:
        return self.transactions / self.seconds if self.seconds else 0.0


@contextmanager
def _backend_env(
    backend: Backend, data_dir: Path, connection_string: str | None
) -> Iterator[dict[str, str]]:
    env = {"BILLING_DATA_DIR": str(data_dir)}
    if backend == "embedded":
        yield env
        return
    if connection_string is not None:
        yield {**env, "BILLING_STORAGE_CONNECTION_STRING": connection_string}
        return
    from billing.devtools.azurite import AzuriteServer, azurite_dir, ensure_azurite

    server = AzuriteServer(ensure_azurite(azurite_dir()))
    try:
        info = server.start()
        yield {**env, "BILLING_STORAGE_CONNECTION_STRING": info.connection_string}
    finally:
        server.close()


@dataclass(frozen=True)
class BatchUpload:
    """A batch file of the caller's for :func:`run_demo`, and the pricebook it needs."""

    path: Path
    content_type: str = "text/csv"
    content_encoding: str | None = None
    pricebook: Path | None = None  # uploaded (made current) before the POST; None: the sample
    allow_duplicate: bool = False  # a benchmark sends the same file again on purpose

    def headers(self) -> dict[str, str]:
        encoding = {"Content-Encoding": self.content_encoding} if self.content_encoding else {}
        return {"Content-Type": self.content_type, **encoding}


def _upload_pricebook(path: Path, client_environment: Mapping[str, str]) -> None:
    """``billing pricebook upload`` against the running pipeline's store."""
    subprocess.run(
        [sys.executable, "-m", "billing.cli", "pricebook", "upload", str(path)],
        env={**os.environ, **client_environment},
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@dataclass(frozen=True)
class StreamResult:
    """Batches submitted back to back, each POST as soon as the previous one's 202 came."""

    statuses: list[dict[str, Any]]
    transactions: int  # over every batch
    seconds: float  # the first POST until the last batch closed (see seconds_to_close)
    intake_seconds: list[float]  # per batch: its POST until its 202

    @property
    def reconciled(self) -> bool:
        return all(status.get("reconciled") is True for status in self.statuses)

    @property
    def throughput(self) -> float:
        return self.transactions / self.seconds if self.seconds else 0.0


#: The roles' settings a client needs to reach the same store as they do.
STORE_VARIABLES = ("BILLING_DATA_DIR", "BILLING_STORAGE_CONNECTION_STRING")


@dataclass(frozen=True)
class _Pipeline:
    root: Path
    cluster: Cluster
    base_url: str
    api_key: str
    client: httpx.Client
    env: Mapping[str, str]

    def client_environment(self) -> dict[str, str]:
        """What the ``billing`` commands need to act on this pipeline: its API and store."""
        store = {name: self.env[name] for name in STORE_VARIABLES if name in self.env}
        if "BILLING_DATA_DIR" in store:  # a client may run from any folder
            store["BILLING_DATA_DIR"] = str(Path(store["BILLING_DATA_DIR"]).resolve())
        return {"BILLING_URL": self.base_url, "BILLING_API_KEY": self.api_key, **store}


@contextmanager
def _running_pipeline(
    *,
    processes: int,
    backend: Backend,
    keep: Path | None = None,
    storage_connection_string: str | None = None,
    environment: Mapping[str, str] | None = None,
) -> Iterator[_Pipeline]:
    """Controller, processors and initiator as processes, healthy, and a client for the API;
    stopped when the block ends."""
    with ExitStack() as stack:
        root = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="billing-")))
        env = stack.enter_context(_backend_env(backend, root / "data", storage_connection_string))
        port, key = free_port(), secrets.token_urlsafe(24)
        env |= {
            "BILLING_API_KEYS": key,
            "BILLING_PORT": str(port),
            meter.EXPORT_DIR_ENV: str(root / "meter"),
            **(environment or {}),
        }
        cluster = Cluster(env=env, logs=root / "logs")
        stack.callback(cluster.stop)
        cluster.start("controller")
        cluster.start("processor", "--processes", str(processes))
        cluster.start("initiator")
        base_url = f"http://127.0.0.1:{port}"
        cluster.wait_healthy(base_url)
        client = stack.enter_context(
            httpx.Client(
                base_url=base_url,
                headers={"Authorization": f"Bearer {key}"},
                timeout=httpx.Timeout(30.0, read=None),
            )
        )
        yield _Pipeline(root, cluster, base_url, key, client, env)


def run_demo(
    *,
    transactions: int = 100_000,
    processes: int = 2,
    backend: Backend = "embedded",
    timeout: float = 300.0,
    keep: Path | None = None,
    on_ready: Callable[[str, str], None] | None = None,
    linger: Callable[[], None] | None = None,
    storage_connection_string: str | None = None,
    environment: Mapping[str, str] | None = None,
    on_environment: Callable[[Path, Mapping[str, str]], None] | None = None,
    batch: BatchUpload | None = None,
) -> DemoResult:
    """Run the pipeline end to end in a fresh data folder; raises if anything fails.

    ``on_ready(base_url, api_key)`` is told where the initiator answers once it does (to
    watch the run with ``billing top`` or the dashboard); ``linger()`` is called after the
    batch, before the roles stop, and may keep them running as long as it likes. With
    ``backend="azurite"``, ``storage_connection_string`` points the roles at an Azurite
    the caller runs (e.g. behind a counting proxy) instead of one started for the run.
    ``environment`` adds variables (``BILLING_*`` settings) for every role.
    ``on_environment(folder, variables)`` is told, with ``on_ready``, the variables that
    point the ``billing`` commands at this run (``BILLING_URL``, ``BILLING_API_KEY``, its
    store) and the run's folder. ``batch`` replaces the demo's generated batch (and the
    sample pricebook) with a file of the caller's; ``transactions`` must be its count."""
    with _running_pipeline(
        processes=processes,
        backend=backend,
        keep=keep,
        storage_connection_string=storage_connection_string,
        environment=environment,
    ) as pipeline:
        root, cluster, client = pipeline.root, pipeline.cluster, pipeline.client
        if batch is None:
            # The same file every run (seed 7), so a store kept from an earlier run (one
            # Azurite for several, as benchmark rounds use) already holds it: it is sent as
            # meant to be billed again, not refused as the same file twice.
            batch = BatchUpload(root / "batch.csv", allow_duplicate=True)
            write_batch_file(batch.path, transactions, customers=500, seed=7, file_format="csv")
        elif batch.pricebook is not None:
            _upload_pricebook(batch.pricebook, pipeline.client_environment())
        if on_ready is not None:
            on_ready(pipeline.base_url, pipeline.api_key)
        if on_environment is not None:
            on_environment(root, pipeline.client_environment())
        # The batch's requests are those between its submission and its close: not the
        # roles' start, nor what runs after (--stay: more batches, a dashboard watching).
        at_submission = _exported_counts(root / "meter")
        roles_before = {role: cluster.cpu_seconds(role) for role in cluster.processes}
        cpu_before, started = roles_before["initiator"], RunStart.now()
        batch_id = _submit(client, batch.path, batch.headers(), batch.allow_duplicate)
        intake_seconds = started.elapsed()
        intake_cpu_seconds = cluster.cpu_seconds("initiator") - cpu_before
        status, polls = _wait_until_done(client, cluster, batch_id, timeout)
        seconds = seconds_to_close(started, [status])
        role_cpu = {role: cluster.cpu_seconds(role) - roles_before[role] for role in roles_before}
        in_batch = meter.diff(_exported_counts(root / "meter"), at_submission)
        invoices = _top_invoices(client, batch_id)
        if linger is not None:
            linger()
        cluster.stop()
        return DemoResult(
            batch_id=batch_id,
            transactions=transactions,
            status=status,
            invoices=invoices,
            seconds=seconds,
            storage_requests={k: n for k, n in in_batch.items() if meter.caller_of(k) is None},
            status_polls=polls,
            intake_seconds=intake_seconds,
            intake_cpu_seconds=intake_cpu_seconds,
            onlooker_requests={k: n for k, n in in_batch.items() if meter.caller_of(k)},
            role_cpu_seconds=role_cpu,
        )
    raise AssertionError("unreachable")  # pragma: no cover (ExitStack never swallows)


def run_stream(
    *,
    batches: int,
    transactions: int,
    processes: int = 2,
    backend: Backend = "embedded",
    timeout: float = 300.0,
    on_ready: Callable[[str, str], None] | None = None,
    linger: Callable[[], None] | None = None,
    storage_connection_string: str | None = None,
    environment: Mapping[str, str] | None = None,
) -> StreamResult:
    """Like :func:`run_demo`, with ``batches`` batches of ``transactions`` each (the demo's
    customers, one seed each) POSTed one after the other: the initiator takes the next
    batch while the processors and the controller work on the ones it accepted.
    ``on_ready``, ``linger`` and ``storage_connection_string`` as for :func:`run_demo`."""
    with _running_pipeline(
        processes=processes,
        backend=backend,
        storage_connection_string=storage_connection_string,
        environment=environment,
    ) as pipeline:
        files = [pipeline.root / f"batch-{n}.csv" for n in range(batches)]
        for seed, path in enumerate(files, start=7):
            write_batch_file(path, transactions, customers=500, seed=seed, file_format="csv")
        if on_ready is not None:
            on_ready(pipeline.base_url, pipeline.api_key)
        intake_seconds: list[float] = []
        batch_ids: list[str] = []
        started = RunStart.now()
        for path in files:
            posted = time.monotonic()
            # The same files every run, as run_demo's: billed again, not refused.
            batch_ids.append(_submit(pipeline.client, path, allow_duplicate=True))
            intake_seconds.append(time.monotonic() - posted)
        statuses = [
            _wait_until_done(pipeline.client, pipeline.cluster, batch_id, timeout)[0]
            for batch_id in batch_ids
        ]
        seconds = seconds_to_close(started, statuses)
        if linger is not None:
            linger()
        return StreamResult(statuses, batches * transactions, seconds, intake_seconds)
    raise AssertionError("unreachable")  # pragma: no cover (ExitStack never swallows)


@dataclass(frozen=True)
class RunStart:
    """When a run's first POST went out, on both clocks :func:`seconds_to_close` needs."""

    monotonic: float
    wall: float

    @classmethod
    def now(cls) -> RunStart:
        return cls(time.monotonic(), time.time())

    def elapsed(self) -> float:
        return time.monotonic() - self.monotonic


def seconds_to_close(started: RunStart, statuses: list[dict[str, Any]]) -> float:
    """From the first POST until the last of the batches closed in the warehouse.

    The controller stamps the close (``timings.completed_at``); the poll that sees it comes
    up to :data:`POLL_SECONDS` later, which timed would add up to a tenth of a short run to
    a figure the benchmarks compare with systems watched every few milliseconds. The stamp
    is read from this machine's clock too (the roles run here). A status without one has
    only the polls' time."""
    closes = [status.get("timings", {}).get("completed_at") for status in statuses]
    if not closes or None in closes:
        return started.elapsed()
    last = max(datetime.fromisoformat(close).timestamp() for close in closes)
    return max(last - started.wall, 0.0)


def _exported_counts(folder: Path) -> dict[str, int]:
    """Every role's requests so far: each process rewrites its export every
    :data:`~shared.meter.EXPORT_EVERY_SECONDS`, so wait for one round first."""
    time.sleep(2 * meter.EXPORT_EVERY_SECONDS)
    return meter.collect_exports(folder)


def _submit(
    client: httpx.Client,
    batch_file: Path,
    headers: Mapping[str, str] | None = None,
    allow_duplicate: bool = False,
) -> str:
    params = {"allow_duplicate": "true"} if allow_duplicate else {}
    with batch_file.open("rb") as body:
        response = client.post(
            "/batches",
            content=body,
            params=params,
            headers=headers or {"Content-Type": "text/csv"},
        )
    if response.status_code != 202:
        raise RuntimeError(f"the batch was refused: {response.status_code} {response.text}")
    batch_id: str = response.json()["batch_id"]
    return batch_id


def _wait_until_done(
    client: httpx.Client, cluster: Cluster, batch_id: str, timeout: float
) -> tuple[dict[str, Any], int]:
    """The batch's final status, and how many times it was asked for."""
    deadline = time.monotonic() + timeout
    for polls in itertools.count(1):
        if time.monotonic() >= deadline:
            break
        cluster.check_alive()
        status: dict[str, Any] = client.get(f"/batches/{batch_id}").raise_for_status().json()
        if status["status"] in FINAL_STATUSES:
            return status, polls
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"batch {batch_id} did not complete within {timeout:.0f} s")


def _top_invoices(client: httpx.Client, batch_id: str, count: int = 5) -> dict[str, Any]:
    """The largest invoices of the batch and how many there are (one page, by total)."""
    response = client.get(
        f"/batches/{batch_id}/invoices", params={"limit": count, "order": "total"}
    )
    page: dict[str, Any] = response.raise_for_status().json()
    return page
