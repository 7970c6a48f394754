"""Batch shapes for the benchmarks: a documented generator of batch files and their pricebooks.

    shape = MATRIX["saas"].resized(20_000)
    data = batch_body(shape)                   # the bytes to POST (gzip applied if asked)
    book = pricebook_document(shape)           # the pricebook JSON the batch is consistent with

``billing demo``'s batch is one shape only: 500 customers, the sample pricebook's 8 SKUs,
``Z`` timestamps, CSV. A SaaS provider's batches differ on every axis a benchmark must vary,
so a :class:`Shape` names each of them:

* ``customers``: distinct customers in the batch, each transaction's customer drawn
  uniformly (so with as many customers as transactions most appear once or twice);
* ``skus`` and ``tier_share``: the generated pricebook has ``skus`` SKUs named
  ``SKU-00001``…, of which the first ``tier_share`` share have two discount tiers, set
  around the SKU's typical quantity so that both tiers and the undiscounted price are hit;
  SKUs are drawn with a Zipf-like weight (a few sell most), quantities log-normally;
* ``regions``: that many regions (``R1``…), each with its own tax rate;
* ``timestamps``: how ``occurred_at`` is spelled: ``Z`` (``2025-01-15T08:00:01Z``),
  ``+00:00``, ``+05:30`` (the same instant as local time in that offset), or ``fraction``
  (microseconds and ``Z``, ``2025-01-15T08:00:01.123456Z``);
* ``file_format`` and ``gzip``: CSV with a header or JSON Lines, either gzip-compressed.

Everything is drawn from ``random.Random(seed)``: the same shape and seed give the same bytes.
Values come from alphabets that need no quoting, so lines are built with f-strings.

:data:`MATRIX` is the named list ``--matrix`` runs: the demo-like base, then one axis varied
at a time, then the SaaS shape and the combination of every costly axis.
"""

from __future__ import annotations

import csv
import gzip as gzip_module
import io
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

from billing.demo.scenario import BatchUpload

Spelling = Literal["Z", "+00:00", "+05:30", "fraction"]
SPELLINGS: tuple[Spelling, ...] = ("Z", "+00:00", "+05:30", "fraction")
FileFormat = Literal["csv", "jsonl"]
CSV_HEADER = "transaction_id,customer_id,sku,quantity,region,occurred_at\n"
#: The shapes' size unless ``--transactions`` says otherwise.
DEFAULT_TRANSACTIONS = 200_000
#: The fewest customers a resized shape keeps: the demo's count.
MIN_CUSTOMERS = 500
_START = datetime(2025, 1, 15, tzinfo=UTC)
_INDIA = timezone(timedelta(hours=5, minutes=30))
_BLOCK = 20_000


@dataclass(frozen=True)
class Shape:
    """What a batch looks like; see the module's docstring for each field."""

    name: str
    transactions: int = DEFAULT_TRANSACTIONS
    customers: int = 500
    skus: int = 10
    tier_share: float = 0.6
    regions: int = 5
    timestamps: Spelling = "Z"
    file_format: FileFormat = "csv"
    gzip: bool = False

    def resized(self, transactions: int) -> Shape:
        """The same shape at ``transactions``: customers in proportion (not below 500)."""
        customers = self.customers
        if customers > MIN_CUSTOMERS:
            customers = max(MIN_CUSTOMERS, customers * transactions // self.transactions)
        return replace(self, transactions=transactions, customers=customers)

    @property
    def content_type(self) -> str:
        return "text/csv" if self.file_format == "csv" else "application/x-ndjson"

    @property
    def content_encoding(self) -> str | None:
        return "gzip" if self.gzip else None

    @property
    def suffix(self) -> str:
        return f".{self.file_format}" + (".gz" if self.gzip else "")

    def describe(self) -> str:
        """One line naming every axis, for report titles and docs."""
        tiers = f", {self.tier_share:.0%} tiered" if self.tier_share else ""
        packing = f"{self.file_format}{'.gz' if self.gzip else ''}"
        return (
            f"{self.transactions:,} tx, {self.customers:,} customers, {self.skus:,} SKUs"
            f"{tiers}, {self.regions} regions, {self.timestamps} timestamps, {packing}"
        )


def _matrix() -> dict[str, Shape]:
    base = Shape("base")
    shapes = [
        base,
        replace(base, name="customers-20k", customers=20_000),
        replace(base, name="customers-200k", customers=200_000),
        replace(base, name="skus-500", skus=500),
        replace(base, name="skus-5000", skus=5_000),
        replace(base, name="ts-+00:00", timestamps="+00:00"),
        replace(base, name="ts-+05:30", timestamps="+05:30"),
        replace(base, name="ts-fraction", timestamps="fraction"),
        replace(base, name="jsonl", file_format="jsonl"),
        replace(base, name="csv-gzip", gzip=True),
        replace(base, name="saas", customers=20_000, skus=500, timestamps="+00:00"),
        replace(
            base,
            name="everything",
            customers=200_000,
            skus=5_000,
            timestamps="+05:30",
            file_format="jsonl",
            gzip=True,
        ),
    ]
    return {shape.name: shape for shape in shapes}


#: The shapes ``--matrix`` runs, by name (200,000 transactions each unless resized).
MATRIX: dict[str, Shape] = _matrix()


@dataclass(frozen=True)
class _Sku:
    code: str
    price_cents: int
    typical: float
    spread: float
    tiers: tuple[tuple[int, str], ...]


def _catalogue(shape: Shape, seed: int) -> list[_Sku]:
    rng = random.Random(f"pricebook-{seed}-{shape.skus}-{shape.tier_share}")
    tiered = round(shape.skus * shape.tier_share)
    skus = []
    for number in range(shape.skus):
        typical = rng.choice((2.0, 10.0, 50.0, 300.0, 2_000.0))
        tiers: tuple[tuple[int, str], ...] = ()
        if number < tiered:
            # One threshold a little above typical, one well above: both get reached.
            low = max(2, int(typical * 1.5))
            tiers = ((low, "5"), (low * 4, "12.5"))
        skus.append(
            _Sku(
                code=f"SKU-{number + 1:05d}",
                price_cents=rng.randrange(1, 50_000),
                typical=typical,
                spread=rng.choice((0.5, 1.0, 1.4)),
                tiers=tiers,
            )
        )
    return skus


def pricebook_document(shape: Shape, *, seed: int = 7) -> bytes:
    """The pricebook JSON (the design's format) every SKU and region of the batch exists in."""
    regions = {
        f"R{n + 1}": {"tax_pct": str(tax)}
        for n, tax in zip(range(shape.regions), (0, 5, 8.875, 19, 20, 21, 25), strict=False)
    }
    for n in range(len(regions), shape.regions):
        regions[f"R{n + 1}"] = {"tax_pct": str(n % 25)}
    skus = {
        sku.code: {
            "unit_price": f"{sku.price_cents // 100}.{sku.price_cents % 100:02d}",
            "tiers": [{"min_quantity": q, "discount_pct": pct} for q, pct in sku.tiers],
        }
        for sku in _catalogue(shape, seed)
    }
    return json.dumps({"currency": "USD", "skus": skus, "regions": regions}).encode()


def _stamp(at: datetime, micros: int, spelling: Spelling) -> str:
    if spelling == "Z":
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if spelling == "+00:00":
        return at.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    if spelling == "+05:30":
        return at.astimezone(_INDIA).strftime("%Y-%m-%dT%H:%M:%S+05:30")
    return at.strftime("%Y-%m-%dT%H:%M:%S") + f".{micros:06d}Z"


def batch_lines(shape: Shape, *, seed: int = 7) -> Iterator[str]:
    """The lines of the batch file (the CSV header first), each ending in ``\\n``."""
    rng = random.Random(f"batch-{seed}")
    catalogue = _catalogue(shape, seed)
    # Zipf-like: the n-th SKU sells 1/n as often as the first.
    weights = [1 / (n + 1) for n in range(len(catalogue))]
    regions = [f"R{n + 1}" for n in range(shape.regions)]
    per_second = 86_400 / max(shape.transactions, 1)
    if shape.file_format == "csv":
        yield CSV_HEADER
    stamp_second, stamp = -1, ""
    for start in range(0, shape.transactions, _BLOCK):
        count = min(_BLOCK, shape.transactions - start)
        buyers = [rng.randrange(shape.customers) for _ in range(count)]
        bought = rng.choices(catalogue, weights=weights, k=count)
        places = rng.choices(regions, k=count)
        for offset in range(count):
            number = start + offset
            sku = bought[offset]
            quantity = min(1_000_000, int(rng.lognormvariate(0, sku.spread) * sku.typical) + 1)
            second = int(number * per_second)
            if shape.timestamps == "fraction" or second != stamp_second:
                at = _START + timedelta(seconds=second)
                stamp = _stamp(at, rng.randrange(1_000_000), shape.timestamps)
                stamp_second = second
            tid = f"tx-{seed}-{number:09d}"
            customer = f"cust-{buyers[offset]:07d}"
            if shape.file_format == "csv":
                yield f"{tid},{customer},{sku.code},{quantity},{places[offset]},{stamp}\n"
            else:
                yield (
                    f'{{"transaction_id":"{tid}","customer_id":"{customer}",'
                    f'"sku":"{sku.code}","quantity":{quantity},"region":"{places[offset]}",'
                    f'"occurred_at":"{stamp}"}}\n'
                )


def batch_body(shape: Shape, *, seed: int = 7) -> bytes:
    """The batch file's bytes as POSTed: gzip-compressed when the shape says so."""
    data = "".join(batch_lines(shape, seed=seed)).encode()
    return gzip_module.compress(data, compresslevel=6) if shape.gzip else data


def batch_rows(shape: Shape, body: bytes) -> Iterator[list[str]]:
    """The rows of ``body`` as CSV fields, whatever its format: what a plain Celery producer
    reads and sends (it decompresses gzip and parses JSON Lines with the ``json`` module)."""
    text = (gzip_module.decompress(body) if shape.gzip else body).decode()
    if shape.file_format == "csv":
        reader = csv.reader(io.StringIO(text, newline=""))
        next(reader)  # the header
        yield from reader
        return
    lines = iter(text.splitlines())
    fields = CSV_HEADER.strip().split(",")
    for line in lines:
        record = json.loads(line)
        yield [str(record[field]) for field in fields]


@dataclass(frozen=True)
class ShapedBatch:
    """A shape's batch file and pricebook written to a folder, for both systems to read."""

    shape: Shape
    path: Path
    pricebook: Path

    @classmethod
    def write(cls, shape: Shape, folder: Path, *, seed: int = 7) -> ShapedBatch:
        path = folder / f"{shape.name}{shape.suffix}"
        path.write_bytes(batch_body(shape, seed=seed))
        pricebook = folder / f"{shape.name}-pricebook.json"
        pricebook.write_bytes(pricebook_document(shape, seed=seed))
        return cls(shape, path, pricebook)

    @property
    def upload(self) -> BatchUpload:
        """What :func:`billing.demo.scenario.run_demo` POSTs, with the pricebook made current."""
        return BatchUpload(
            self.path,
            self.shape.content_type,
            self.shape.content_encoding,
            self.pricebook,
            allow_duplicate=True,  # each round and latency sends the same file again
        )

    def rows(self) -> Iterator[list[str]]:
        """The rows as a plain Celery producer reads them (see :func:`batch_rows`)."""
        return batch_rows(self.shape, self.path.read_bytes())
