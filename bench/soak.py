"""Many batches through the running roles: do descriptors, threads and memory stay flat?

    python -m bench.soak [--quick] [--batches N] [--rows R] [--backend embedded|azurite]
                         [--layout roles|all-in-one]

Starts the deployment as it runs for months: the initiator, a processor and the controller
as separate processes (``--layout roles``) or ``billing serve --all-in-one`` (one process),
on the embedded backend or on an Azurite of its own. Then POSTs ``--batches`` batches of
``--rows`` rows each, one after the other, every body distinct (transaction ids carry the
batch's number; an identical body could be refused as a duplicate), and waits until the
last one has closed. Open descriptors, threads and RSS of every role process, its children
included (psutil), are sampled before the first batch, after every tenth of the batches
and once the last batch closed.

The verdict per role and measure is "flat" when the last sample is within 10 % of the
sample at 10 % of the batches (after warm-up): the first batches open what a role keeps for
its life (warehouse and queue connections, HTTP pools, worker threads) and fill its caches,
so descriptors, threads and memory grow over them whether or not anything leaks. The ratio
to the sample before the first batch is printed too. A leak of one descriptor per batch
shows as a ratio near 10 over the last 90 % of the batches, far beyond the 10 %.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
import psutil

from bench.deployment import azurite_connection_string, batch_file
from bench.report import Cell, Report, base_parser
from billing.demo.cluster import Cluster, free_port
from shared.contracts.batch_status import FINAL_STATUSES

Layout = Literal["roles", "all-in-one"]
#: Within this fraction of the first (or warm-up) sample, a measure is "flat".
FLAT_TOLERANCE = 0.10
SAMPLES = 10  # during the run: after every tenth of the batches
CLOSE_TIMEOUT_SECONDS = 1800.0
POLL_SECONDS = 0.5
HEADER = "transaction_id,customer_id,sku,quantity,region,occurred_at\n"


@dataclass(frozen=True)
class Sample:
    label: str  # "before", "10 %", ..., "after"
    descriptors: int
    threads: int
    rss_bytes: int


def measure(pid: int, label: str) -> Sample:
    """Descriptors, threads and RSS of the process ``pid`` and all its children, summed."""
    parent = psutil.Process(pid)
    descriptors = threads = rss = 0
    for process in (parent, *parent.children(recursive=True)):
        try:
            with process.oneshot():
                descriptors += process.num_fds()
                threads += process.num_threads()
                rss += process.memory_info().rss
        except psutil.NoSuchProcess:  # a child that ended between the listing and the read
            continue
    return Sample(label, descriptors, threads, rss)


class BatchBodies:
    """Distinct batch bodies of ``rows`` rows: the same rows, transaction ids per batch."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        # generate_lines names transactions "tx-<seed>-<n>"; the seed's prefix is swapped
        # for the batch's number, so bodies differ by their ids only and cost nothing to make.
        self._template = batch_file(rows, seed=7) if rows > 1 else b""

    def body(self, n: int) -> bytes:
        if self.rows == 1:
            return f"{HEADER}soak-{n},cust-1,SEAT-PRO,3,EU,2026-01-01T00:00:00Z\n".encode()
        return self._template.replace(b"tx-7-", f"tx-soak{n}-".encode())


@contextmanager
def running(layout: Layout, backend: str, root: Path) -> Iterator[tuple[Cluster, httpx.Client]]:
    """The deployment's processes, healthy, and an authenticated client; stopped at the end."""
    with ExitStack() as stack:
        port, key = free_port(), secrets.token_urlsafe(24)
        env = {
            "BILLING_DATA_DIR": str(root / "data"),
            "BILLING_API_KEYS": key,
            "BILLING_PORT": str(port),
        }
        if backend == "azurite":
            env["BILLING_STORAGE_CONNECTION_STRING"] = stack.enter_context(
                azurite_connection_string()
            )
        cluster = Cluster(env=env, logs=root / "logs")
        stack.callback(cluster.stop)
        if layout == "all-in-one":
            cluster.start("serve", "--all-in-one")
        else:
            cluster.start("controller")
            cluster.start("processor")
            cluster.start("initiator")
        base_url = f"http://127.0.0.1:{port}"
        cluster.wait_healthy(base_url, timeout=120.0)
        client = stack.enter_context(
            httpx.Client(
                base_url=base_url,
                headers={"Authorization": f"Bearer {key}", "Content-Type": "text/csv"},
                timeout=httpx.Timeout(60.0),
            )
        )
        yield cluster, client


def wait_closed(client: httpx.Client, cluster: Cluster, batch_id: str) -> str:
    """The batch's final status once it has one (every role still alive meanwhile)."""
    deadline = time.monotonic() + CLOSE_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        cluster.check_alive()
        status: str = client.get(f"/batches/{batch_id}").raise_for_status().json()["status"]
        if status in FINAL_STATUSES:
            return status
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"batch {batch_id} did not close within {CLOSE_TIMEOUT_SECONDS:.0f} s")


def soak(
    layout: Layout, backend: str, batches: int, rows: int
) -> tuple[dict[str, list[Sample]], float, str]:
    """Run the soak; samples per role, the seconds it took, the last batch's status."""
    bodies = BatchBodies(rows)
    every = max(batches // SAMPLES, 1)
    with (
        tempfile.TemporaryDirectory(prefix="billing-soak-") as folder,
        running(layout, backend, Path(folder)) as (cluster, client),
    ):
        pids = {role: process.pid for role, process in cluster.processes.items()}
        samples: dict[str, list[Sample]] = {role: [] for role in pids}

        def take(label: str) -> None:
            for role, pid in pids.items():
                samples[role].append(measure(pid, label))

        take("before")
        started = time.monotonic()
        batch_id = ""
        for n in range(batches):
            response = client.post("/batches", content=bodies.body(n))
            if response.status_code != 202:
                cluster.check_alive()
                raise RuntimeError(f"batch {n} refused: {response.status_code} {response.text}")
            batch_id = response.json()["batch_id"]
            if (n + 1) % every == 0 and n + 1 < batches:
                take(f"{(n + 1) * 100 // batches} %")
                print(f"  {n + 1:,} of {batches:,} batches accepted", file=sys.stderr)
        status = wait_closed(client, cluster, batch_id)
        take("after")
        return samples, time.monotonic() - started, status


def ratio(last: float, first: float) -> float:
    return last / first if first else 1.0


def verdict(value: float) -> str:
    return "flat" if value <= 1 + FLAT_TOLERANCE else "GROWS"


def role_rows(samples: list[Sample]) -> tuple[list[list[Cell]], dict[str, float]]:
    """The table of one role's samples and its ratios, end against the sample at 10 %."""
    rows: list[list[Cell]] = [
        [s.label, s.descriptors, s.threads, round(s.rss_bytes / 2**20, 1)] for s in samples
    ]
    first, last = samples[0], samples[-1]
    warm = samples[1] if len(samples) > 2 else first  # the sample at 10 %

    def ratios_from(start: Sample) -> dict[str, float]:
        return {
            "descriptors": ratio(last.descriptors, start.descriptors),
            "threads": ratio(last.threads, start.threads),
            "rss": ratio(last.rss_bytes, start.rss_bytes),
        }

    for label, values in (
        ("last / before", ratios_from(first)),
        ("last / 10 %", ratios_from(warm)),
    ):
        rows.append([label, *(round(value, 3) for value in values.values())])
    ratios = ratios_from(warm)
    rows.append(["verdict (last / 10 %)", *(verdict(value) for value in ratios.values())])
    return rows, ratios


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser("descriptors, threads and RSS of every role over many batches")
    parser.add_argument("--batches", type=int, default=None, help="default 10,000 (quick: 50)")
    parser.add_argument("--rows", type=int, default=1, help="rows per batch (default 1)")
    parser.add_argument("--backend", choices=("embedded", "azurite"), default="embedded")
    parser.add_argument(
        "--layout",
        choices=("roles", "all-in-one"),
        default="roles",
        help="separate role processes, or billing serve --all-in-one",
    )
    args = parser.parse_args(argv)
    batches: int = args.batches or (50 if args.quick else 10_000)
    layout: Layout = args.layout
    report = Report(benchmark="soak", quick=args.quick)
    print(f"  {layout}, {args.backend}: {batches:,} batches of {args.rows:,}", file=sys.stderr)
    samples, seconds, status = soak(layout, args.backend, batches, args.rows)

    all_flat = True
    for role, role_samples in samples.items():
        rows, ratios = role_rows(role_samples)
        report.table(
            f"{role} ({layout}, {args.backend}): {batches:,} batches of {args.rows:,} rows, "
            "the process and its children",
            ["sample", "descriptors", "threads", "RSS MiB"],
            rows,
        )
        for measure_name, value in ratios.items():
            report.figure(f"{role}.{measure_name}_end_over_warm", value)
            all_flat = all_flat and value <= 1 + FLAT_TOLERANCE
    report.figure("batches_per_second", batches / seconds)
    report.figure("all_flat", float(all_flat))
    report.conclude(
        f"{batches:,} batches in {seconds:.0f} s ({batches / seconds:.1f}/s), the last one "
        f"{status}; the verdicts compare the end with the sample at 10 % (after warm-up: the "
        "first batches open the warehouse, the queues and the HTTP pools once); "
        + ("every role flat within 10 %" if all_flat else "NOT flat: see the GROWS cells")
    )
    report.emit(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
