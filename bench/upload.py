"""Uploads: a big batch file by upload to storage against the same file as a POST body.

    python -m bench.upload [--quick] [--size-gb 1] [--backend embedded|azurite]

The same generated CSV goes to a real initiator (``billing initiator`` in a subprocess, a
fresh one per path, so that each peak is its own) two ways, one after the other:

* **body**: ``POST /batches`` with the file as the request body, streamed from disk by httpx
  (what ``billing submit --via-body`` does);
* **upload**: ``POST /uploads``, the file uploaded in 8 MiB blocks, 4 in parallel, by the
  Azure SDK (``billing submit --via-upload``), then ``POST /batches`` with
  ``{"upload": blob}``: the initiator reads the blob back from storage.

On the embedded backend the upload's bytes still pass through the initiator (its upload
route stores them as blocks); on Azurite they go to the blob service, as on Azure. A thread
samples the initiator's RSS (psutil, every 20 ms). Printed: seconds end to end (upload and
intake apart), transactions/s, the ratio upload/body, and each path's peak RSS.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx

from bench.in_process import API_KEY
from bench.intake import (
    BYTES_PER_LINE,
    INTAKE_MEMORY_BUDGET_MB,
    RssSampler,
    RunningInitiator,
    idle_rss,
    post_file,
)
from bench.report import Report, base_parser
from billing.cli.uploader import upload_file
from billing.sample_batches import write_batch_file


def main(argv: Sequence[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0] if __doc__ else "upload")
    parser.add_argument("--size-gb", type=float, default=None, help="default 1 (quick: 0.02)")
    parser.add_argument("--backend", choices=("embedded", "azurite"), default="embedded")
    args = parser.parse_args(argv)
    size_gb: float = args.size_gb or (0.02 if args.quick else 1.0)
    report = Report(benchmark="upload", quick=args.quick)
    with tempfile.TemporaryDirectory(prefix="bench-upload-") as folder:
        os.environ["XDG_CACHE_HOME"] = str(Path(folder) / "cache")  # the resume files
        with storage_env(args.backend) as env:
            compare(report, Path(folder), size_gb, env, args.backend)
    report.emit(args.json)
    return 0


@contextlib.contextmanager
def storage_env(backend: str) -> Iterator[dict[str, str]]:
    if backend == "embedded":
        yield {}
        return
    from billing.devtools.azurite import AzuriteServer, azurite_dir, ensure_azurite

    server = AzuriteServer(ensure_azurite(azurite_dir()))
    try:
        info = server.start()
        yield {"BILLING_STORAGE_CONNECTION_STRING": info.connection_string}
    finally:
        server.stop()


def compare(
    report: Report, folder: Path, size_gb: float, env: dict[str, str], backend: str
) -> None:
    transactions = int(size_gb * 1e9 / BYTES_PER_LINE)
    path = folder / "batch.csv"
    write_batch_file(path, transactions, customers=20_000, seed=11)
    size = path.stat().st_size
    with RunningInitiator(folder / "body", env) as (url, process):
        body_idle = idle_rss(process)
        with RssSampler(process) as body_rss:
            started = time.perf_counter()
            answer = post_file(url, path)
            body_seconds = time.perf_counter() - started
    assert answer["transactions"] == transactions, answer
    with (
        RunningInitiator(folder / "upload", env) as (url, process),
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}) as client,
    ):
        upload_idle = idle_rss(process)
        with RssSampler(process) as upload_rss:
            started = time.perf_counter()
            uploaded = upload_file(client, path)
            upload_seconds = time.perf_counter() - started
            response = client.post(
                "/batches",
                json={"upload": uploaded.blob, "content_type": "text/csv"},
                timeout=None,
            )
            total_seconds = time.perf_counter() - started
    response.raise_for_status()
    assert response.json()["transactions"] == transactions, response.text
    intake_seconds = total_seconds - upload_seconds
    ratio = total_seconds / body_seconds
    body_added_mb = (body_rss.peak - body_idle) / 1e6
    upload_added_mb = (upload_rss.peak - upload_idle) / 1e6
    report.table(
        f"{size / 1e9:.2f} GB ({transactions:,} transactions) on {backend}: upload vs POST body",
        ["path", "seconds", "transactions/s", "initiator idle RSS MB", "added MB"],
        [
            [
                "POST /batches with the file as body",
                body_seconds,
                transactions / body_seconds,
                body_idle / 1e6,
                body_added_mb,
            ],
            [
                "upload to storage, then POST /batches {upload}",
                total_seconds,
                transactions / total_seconds,
                upload_idle / 1e6,
                upload_added_mb,
            ],
            ["  of which the upload (8 MiB blocks, 4 in parallel)", upload_seconds, "", "", ""],
            ["  of which the intake from the blob", intake_seconds, "", "", ""],
        ],
    )
    report.figure("body_seconds", body_seconds)
    report.figure("upload_total_seconds", total_seconds)
    report.figure("upload_to_body_ratio", ratio)
    report.figure("body_peak_rss_mb", body_rss.peak / 1e6)
    report.figure("upload_peak_rss_mb", upload_rss.peak / 1e6)
    report.figure("body_added_rss_mb", body_added_mb)
    report.figure("upload_added_rss_mb", upload_added_mb)
    report.figure("file_gb", size / 1e9)
    verdict = "within" if upload_added_mb <= INTAKE_MEMORY_BUDGET_MB else "ABOVE"
    report.conclude(
        f"by upload the {size / 1e9:.2f} GB file takes {ratio:.2f}x the time of a POST body "
        f"end to end on {backend}; the upload path adds {upload_added_mb:.0f} MB to the "
        f"initiator's idle RSS ({verdict} the {INTAKE_MEMORY_BUDGET_MB} MB budget), the body "
        f"path {body_added_mb:.0f} MB"
    )


if __name__ == "__main__":
    raise SystemExit(main())
