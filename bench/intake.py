"""Intake: throughput against a plain ``csv`` parse, peak memory on a big file, chunk size.

    python -m bench.intake [--quick] [--size-gb 1] [--sweep-transactions 200000]
                           [--duplicate-rounds 7] [--only-duplicates]
                           [--only-transaction-ids]

1. **Throughput and memory.** A generated CSV of ``--size-gb`` is POSTed to a real initiator
   (``billing initiator`` in a subprocess, embedded backend in a temporary folder), streamed
   from disk by httpx. A thread samples the initiator's RSS with psutil every 20 ms. The same
   file is then read by the validating parser alone and by the ``csv`` module (which only
   splits fields) in this process. Printed: transactions/s of the three, the ratios, the RSS
   before the upload and at its peak.
2. **Chunk size.** A smaller batch is accepted through the same app in-process at chunk sizes
   500, 1,000, 2,000 and 5,000 (up then down, best of both): intake time, storage requests
   per chunk and per 1,000 transactions (the meter), payload bytes.
3. **Compression level** of payload blobs: one 2,000-transaction chunk at Zstandard 1, 3, 9, 19.
4. **Duplicate-body check** on, off and overridden, on a small and a large batch, rounds
   interleaved (:mod:`bench.intake_duplicates`): transactions/s, the on/off ratio per shape
   and the table requests it adds. ``--only-duplicates`` runs this part alone.
6. **Billed-id check** off, on, and on with a million ids already in the window, on the
   same two batches, rounds interleaved (:mod:`bench.intake_transaction_ids`): the ratios
   and the blob requests it adds. ``--only-transaction-ids`` runs this part alone.
5. **Segment checks** per batch shape: an intake helper's fast path for a clean CSV or JSON
   Lines segment against the line-by-line check (:mod:`bench.intake_segments`).
"""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import psutil

from bench.in_process import API_KEY
from bench.intake_duplicates import duplicate_check_cost
from bench.intake_segments import segment_check_cost
from bench.intake_sweep import chunk_size_sweep, compression_levels
from bench.intake_transaction_ids import transaction_id_check_cost
from bench.report import Report, base_parser
from billing.sample_batches import write_batch_file
from initiator.intake import parse_batch
from shared.domain.pricebook import sample_pricebook

#: Bytes per line of ``billing generate``'s CSV, to size the file from ``--size-gb``.
BYTES_PER_LINE = 72
#: What taking one batch may add to the initiator's resident memory (its intake helpers
#: included) over what it holds idle, whatever the file's size: the intake streams, so a
#: 1 GB file costs about what a 100 MB one does. Measured over idle (the helpers started
#: and settled, about 200 MB on CPython 3.11: the same for every batch). A 1 GB file adds
#: 110-150 MB on a 2-core machine, the most under load: the duplicate detector's ids and
#: buffers (about 50 MB), the segments at the helpers and the chunks being stored, the
#: helpers' own working sets, and what the allocator keeps. Reading the file whole, or
#: keeping every id, would add gigabytes.
INTAKE_MEMORY_BUDGET_MB = 200


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0] if __doc__ else "intake")
    parser.add_argument("--size-gb", type=float, default=None, help="default 1 (quick: 0.02)")
    parser.add_argument("--sweep-transactions", type=int, default=None, help="default 200,000")
    parser.add_argument("--duplicate-rounds", type=int, default=None, help="default 7 (quick: 3)")
    parser.add_argument(
        "--only-duplicates", action="store_true", help="only the duplicate-body check's cost"
    )
    parser.add_argument(
        "--only-transaction-ids", action="store_true", help="only the billed-id check's cost"
    )
    args = parser.parse_args(argv)
    quick: bool = args.quick
    size_gb: float = args.size_gb or (0.02 if quick else 1.0)
    sweep_transactions: int = args.sweep_transactions or (20_000 if quick else 200_000)
    duplicate_rounds: int = args.duplicate_rounds or (3 if quick else 7)
    report = Report(benchmark="intake", quick=quick)
    everything = not (args.only_duplicates or args.only_transaction_ids)
    if everything:
        with tempfile.TemporaryDirectory(prefix="bench-intake-") as folder:
            measure_big_file(report, Path(folder), size_gb)
        chunk_size_sweep(report, sweep_transactions, rounds=1 if quick else 2)
        compression_levels(report)
        segment_check_cost(report, quick=quick)
    if everything or args.only_duplicates:
        duplicate_check_cost(report, quick=quick, rounds=duplicate_rounds)
    if everything or args.only_transaction_ids:
        transaction_id_check_cost(report, quick=quick, rounds=duplicate_rounds)
    report.emit(args.json)
    return 0


def measure_big_file(report: Report, folder: Path, size_gb: float) -> None:
    transactions = int(size_gb * 1e9 / BYTES_PER_LINE)
    path = folder / "batch.csv"
    write_batch_file(path, transactions, customers=20_000, seed=11)
    size = path.stat().st_size
    with RunningInitiator(folder / "data") as (url, process):
        baseline_rss = idle_rss(process)
        with RssSampler(process) as sampler:
            started = time.perf_counter()
            answer = post_file(url, path)
            intake_seconds = time.perf_counter() - started
    assert answer["transactions"] == transactions, answer
    csv_seconds = plain_csv_seconds(path)
    parse_seconds = parser_only_seconds(path, transactions)
    intake_rate = transactions / intake_seconds
    csv_rate = transactions / csv_seconds
    parse_rate = transactions / parse_seconds
    peak_mb = sampler.peak / 1e6
    added_mb = (sampler.peak - baseline_rss) / 1e6
    report.table(
        f"POST /batches of {size / 1e9:.2f} GB ({transactions:,} transactions) vs csv.reader",
        ["reader", "seconds", "transactions/s"],
        [
            ["initiator (parse, validate, store, enqueue)", intake_seconds, intake_rate],
            ["parse_batch alone (validate, no HTTP, no storage)", parse_seconds, parse_rate],
            ["csv.reader (split fields only)", csv_seconds, csv_rate],
        ],
    )
    report.table(
        "initiator RSS",
        ["moment", "MB"],
        [
            ["before the upload (idle)", baseline_rss / 1e6],
            ["peak while taking the batch", peak_mb],
            ["added by the batch", added_mb],
        ],
    )
    report.figure("intake_transactions_per_s", intake_rate)
    report.figure("csv_transactions_per_s", csv_rate)
    report.figure("intake_to_csv_ratio", intake_rate / csv_rate)
    report.figure("intake_to_parser_ratio", intake_rate / parse_rate)
    report.figure("peak_rss_mb", peak_mb)
    report.figure("added_rss_mb", added_mb)
    report.figure("body_gb", size / 1e9)
    verdict = "within" if added_mb <= INTAKE_MEMORY_BUDGET_MB else "ABOVE"
    report.conclude(
        f"intake runs at {intake_rate / csv_rate:.2f}x the speed of a bare csv.reader pass and "
        f"{intake_rate / parse_rate:.2f}x that of the validating parser alone; "
        f"a {size / 1e9:.2f} GB body adds {added_mb:.0f} MB to the initiator's idle RSS "
        f"(peak {peak_mb:.0f} MB), {verdict} the {INTAKE_MEMORY_BUDGET_MB} MB budget"
    )


class RunningInitiator:
    """``billing initiator`` on a free port, in its own process, with its own data folder."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        """``env``: more ``BILLING_*`` variables (a storage connection string, say)."""
        self._data_dir = data_dir
        self._env = env or {}
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> tuple[str, psutil.Process]:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {
            **os.environ,
            "BILLING_DATA_DIR": str(self._data_dir),
            "BILLING_API_KEYS": API_KEY,
            "BILLING_PORT": str(port),
            "BILLING_LOG_LEVEL": "WARNING",
            "BILLING_DUPLICATE_BODY_WINDOW_SECONDS": "0",  # the same file, round after round
            **self._env,
        }
        billing = Path(sys.executable).with_name("billing")
        log = (self._data_dir.parent / "initiator.log").open("wb")
        self._process = subprocess.Popen(
            [str(billing), "initiator"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()  # the child holds its own descriptor
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the initiator did not start")
            time.sleep(0.1)
        return url, psutil.Process(self._process.pid)

    def __exit__(self, *_exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=30)


class RssSampler:
    """Samples a process's resident memory (children included) until stopped; keeps the peak."""

    def __init__(self, process: psutil.Process, interval: float = 0.02) -> None:
        self._process = process
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peak = 0

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, process_rss(self._process))
            self._stop.wait(self._interval)


def idle_rss(process: psutil.Process, settle_seconds: float = 1.0, limit: float = 60.0) -> int:
    """The process's RSS (children included) once it has stopped growing: a fresh
    initiator's intake helpers are still importing when it first answers, and what they
    load is the same for every batch, not the batch's cost."""
    deadline = time.monotonic() + limit
    previous = process_rss(process)
    while time.monotonic() < deadline:
        time.sleep(settle_seconds)
        current = process_rss(process)
        if abs(current - previous) < 1_000_000:
            return current
        previous = current
    return previous


def process_rss(process: psutil.Process) -> int:
    try:
        return int(
            process.memory_info().rss
            + sum(child.memory_info().rss for child in process.children(recursive=True))
        )
    except psutil.NoSuchProcess:
        return 0


def post_file(url: str, path: Path) -> dict[str, object]:
    headers = {
        "Authorization": f"Bearer {API_KEY}",
        "Content-Type": "text/csv",
        "Content-Length": str(path.stat().st_size),
    }
    response = httpx.post(
        f"{url}/batches", content=file_blocks(path), headers=headers, timeout=None
    )
    response.raise_for_status()
    answer: dict[str, object] = response.json()
    return answer


def file_blocks(path: Path, size: int = 1024 * 1024) -> Iterator[bytes]:
    with path.open("rb") as source:
        while block := source.read(size):
            yield block


def parser_only_seconds(path: Path, transactions: int) -> float:
    """The validating parser alone, in this process: what HTTP, storage and queues add is
    the difference to the initiator's time."""
    started = time.perf_counter()
    reader = parse_batch(
        file_blocks(path),
        content_type="text/csv",
        content_encoding=None,
        pricebook=sample_pricebook(),
    )
    count = sum(1 for _ in reader)
    assert count == transactions
    assert reader.rejection() is None
    return time.perf_counter() - started


def plain_csv_seconds(path: Path) -> float:
    """The floor: the ``csv`` module splitting every line, no validation, no storage."""
    started = time.perf_counter()
    with path.open(newline="", encoding="utf-8") as source:
        for _ in csv.reader(source):
            pass
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
