"""The in-process parts of ``bench.intake``: the chunk-size sweep and the compression levels.

The sweep accepts one batch through the real app (ASGI, lifespan, the embedded backend in a
fresh folder per run) at each chunk size and counts the storage requests the intake made
with the meter. Requests per chunk do not depend on the backend (one payload blob and one
work item per chunk, a few table writes per batch), so the embedded backend tells the same
story as Azure here, without Azure's latency hiding the CPU cost.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio

from bench.in_process import asgi_client, bench_settings, timed_post
from bench.report import Report
from billing.sample_batches import generate_lines
from shared import meter
from shared.contracts.chunk_payload import chunk_json, encode_chunk
from shared.domain.pricebook import sample_pricebook

CHUNK_SIZES = (500, 1000, 2000, 5000)
COMPRESSION_LEVELS = (1, 3, 9, 19)


def chunk_size_sweep(report: Report, transactions: int, rounds: int) -> None:
    body = "".join(generate_lines(transactions, customers=2000, seed=5)).encode()
    order = [*CHUNK_SIZES, *reversed(CHUNK_SIZES)] if rounds > 1 else list(CHUNK_SIZES)
    best: dict[int, tuple[float, dict[str, int]]] = {}
    for size in order:
        seconds, requests = anyio.run(_accept_once, body, size)
        if size not in best or seconds < best[size][0]:
            best[size] = (seconds, requests)
    rows: list[list[str | int | float]] = []
    for size in CHUNK_SIZES:
        seconds, requests = best[size]
        chunks = -(-transactions // size)
        total = meter.total(requests)
        rows.append(
            [
                size,
                chunks,
                seconds,
                transactions / seconds,
                total,
                total / chunks,
                total / (transactions / 1000),
            ]
        )
        report.figure(f"chunk_{size}_transactions_per_s", transactions / seconds)
        report.figure(f"chunk_{size}_requests_per_1k", total / (transactions / 1000))
    report.table(
        f"chunk size: accepting {transactions:,} transactions (embedded, best of {rounds})",
        ["chunk size", "chunks", "seconds", "transactions/s", "requests", "per chunk", "per 1k tx"],
        rows,
    )
    fastest = max(rows, key=lambda row: float(row[3]))
    report.conclude(
        f"intake speed hardly depends on the chunk size (best: {fastest[0]}); storage requests "
        "fall in proportion to it, and every later stage (processor get/put/delete, controller "
        "apply) pays per chunk too — see docs/decisions/0003-chunk-sizes.md"
    )


async def _accept_once(body: bytes, chunk_size: int) -> tuple[float, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="bench-chunks-") as folder:
        settings = bench_settings(Path(folder), chunk_size=chunk_size)
        async with asgi_client(settings) as client:
            return await timed_post(client, body)


def compression_levels(report: Report, transactions: int = 2000, repeats: int = 20) -> None:
    from initiator.intake import parse_batch

    body = "".join(generate_lines(transactions, customers=500, seed=3)).encode()
    reader = parse_batch(
        [body], content_type="text/csv", content_encoding=None, pricebook=sample_pricebook()
    )
    rows_ = list(reader)
    raw = len(chunk_json("b", 0, rows_))
    table: list[list[str | int | float]] = []
    # Levels interleaved and the fastest of the repeats kept: the machine is shared.
    fastest = dict.fromkeys(COMPRESSION_LEVELS, float("inf"))
    sizes: dict[int, int] = {}
    for _ in range(repeats):
        for level in COMPRESSION_LEVELS:
            started = time.perf_counter()
            data = encode_chunk("b", 0, rows_, compresslevel=level)
            fastest[level] = min(fastest[level], time.perf_counter() - started)
            sizes[level] = len(data)
    for level in COMPRESSION_LEVELS:
        milliseconds = fastest[level] * 1000
        table.append([level, sizes[level], sizes[level] / raw, milliseconds])
        report.figure(f"zstd_{level}_ratio", sizes[level] / raw)
        report.figure(f"zstd_{level}_ms", milliseconds)
    report.table(
        f"payload blob of {transactions:,} transactions by Zstandard level"
        " (encode + compress, best)",
        ["level", "bytes", "of JSON", "ms per chunk"],
        table,
    )
