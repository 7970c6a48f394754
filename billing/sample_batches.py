"""Realistic batch files for demos, tests and benchmarks (``billing generate``).

The data is consistent with the sample pricebook: every SKU and region exists in it, and
quantities follow each SKU's nature (a few seats, thousands of API calls), so rating hits
every discount tier. Each customer has a home region and a handful of SKUs it buys;
transactions are spread over one day in arrival order, as an on-premises system would send
them. The same seed gives the same file, byte for byte.

Speed matters (a benchmark writes 1 GB): lines are built with f-strings from values drawn a
block at a time, never through the ``csv`` or ``json`` modules, which is safe because every
value is drawn from an alphabet that needs no quoting or escaping. About 1 M lines in a few
seconds.
"""

from __future__ import annotations

import gzip as gzip_module
import random
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO, Literal

BatchFileFormat = Literal["csv", "jsonl"]
CSV_HEADER = "transaction_id,customer_id,sku,quantity,region,occurred_at\n"
BLOCK = 20_000
FIRST_DAY = datetime(2025, 1, 15, tzinfo=UTC)


@dataclass(frozen=True)
class SkuProfile:
    """How much of a SKU one transaction buys: log-normal around ``typical``."""

    sku: str
    weight: float
    typical: float
    spread: float


# Every SKU and region below exists in shared/domain/pricebooks/sample.json.
SKUS = (
    SkuProfile("API-CALLS", 30, 2_000, 1.6),
    SkuProfile("STORAGE-GB", 15, 200, 1.4),
    SkuProfile("EGRESS-GB", 15, 300, 1.5),
    SkuProfile("BUILD-MINUTES", 15, 600, 1.3),
    SkuProfile("SEAT-BASIC", 10, 8, 1.0),
    SkuProfile("SEAT-PRO", 8, 12, 1.1),
    SkuProfile("SEAT-ENTERPRISE", 5, 30, 0.9),
    SkuProfile("SUPPORT-PREMIUM", 2, 1, 0.3),
)
REGIONS = (("US", 40), ("EU", 30), ("UK", 12), ("JP", 8), ("BR", 7), ("ZERO", 3))
MAX_QUANTITY = 1_000_000
_SKUS_PER_CUSTOMER = 3


def generate_lines(
    transactions: int,
    *,
    customers: int = 1000,
    seed: int = 0,
    file_format: BatchFileFormat = "csv",
) -> Iterator[str]:
    """The lines of a batch file (with the CSV header), each ending in ``\\n``."""
    rng = random.Random(seed)
    profiles = _customers(rng, customers, seed)
    day_seconds = 86_400
    per_second = day_seconds / max(transactions, 1)
    day = FIRST_DAY + timedelta(days=seed % 365)
    date = day.strftime("%Y-%m-%d")
    if file_format == "csv":
        yield CSV_HEADER
    # Log-normal multipliers drawn once and then sampled per block: ``lognormvariate`` per
    # line would be a third of the time.
    spreads = {profile.spread for profile in SKUS}
    multipliers = {
        spread: [rng.lognormvariate(0, spread) for _ in range(4096)] for spread in spreads
    }
    picks = range(_SKUS_PER_CUSTOMER)
    for start in range(0, transactions, BLOCK):
        count = min(BLOCK, transactions - start)
        buyers = rng.choices(profiles, k=count)
        sku_picks = rng.choices(picks, k=count)
        draws = rng.choices(range(4096), k=count)
        millis = rng.choices(range(1000), k=count)
        clock_second = -1
        clock = ""
        for offset in range(count):
            customer, region, skus = buyers[offset]
            profile = skus[sku_picks[offset]]
            quantity = int(multipliers[profile.spread][draws[offset]] * profile.typical) + 1
            quantity = min(quantity, MAX_QUANTITY)
            number = start + offset
            second = int(number * per_second)
            if second != clock_second:
                hours, rest = divmod(second, 3600)
                clock = f"{date}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
                clock_second = second
            occurred = f"{clock}.{millis[offset]:03d}Z"
            tid = f"tx-{seed}-{number:09d}"
            if file_format == "csv":
                yield f"{tid},{customer},{profile.sku},{quantity},{region},{occurred}\n"
            else:
                yield (
                    f'{{"transaction_id":"{tid}","customer_id":"{customer}",'
                    f'"sku":"{profile.sku}","quantity":{quantity},"region":"{region}",'
                    f'"occurred_at":"{occurred}"}}\n'
                )


def write_batch_file(
    out: Path,
    transactions: int,
    *,
    customers: int = 1000,
    seed: int = 0,
    file_format: BatchFileFormat = "csv",
    gzip: bool = False,
) -> int:
    """Write a batch file; returns its size in bytes (compressed, with ``gzip``)."""
    with ExitStack() as stack:
        raw: BinaryIO = stack.enter_context(out.open("wb"))
        sink: BinaryIO | gzip_module.GzipFile = (
            stack.enter_context(gzip_module.GzipFile(fileobj=raw, mode="wb", compresslevel=6))
            if gzip
            else raw
        )
        buffer: list[str] = []
        for line in generate_lines(
            transactions, customers=customers, seed=seed, file_format=file_format
        ):
            buffer.append(line)
            if len(buffer) >= BLOCK:
                sink.write("".join(buffer).encode())
                buffer.clear()
        sink.write("".join(buffer).encode())
    return out.stat().st_size


def _customers(
    rng: random.Random, count: int, seed: int
) -> list[tuple[str, str, tuple[SkuProfile, ...]]]:
    """Each customer: its id, home region and the few SKUs it buys."""
    regions = [code for code, _ in REGIONS]
    region_weights = [weight for _, weight in REGIONS]
    sku_weights = [profile.weight for profile in SKUS]
    return [
        (
            f"cust-{seed}-{number:06d}",
            rng.choices(regions, region_weights)[0],
            tuple(rng.choices(SKUS, sku_weights, k=_SKUS_PER_CUSTOMER)),
        )
        for number in range(max(count, 1))
    ]
