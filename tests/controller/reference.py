"""A tiny reference rater and a batch builder for the controller tests.

The reference rater reads the sample pricebook's JSON directly and applies design §6's
formulas with ``Decimal`` in the most literal way; it shares no code with
``processor.rating``. The result blobs the controller reads are made the way a processor
makes them (production rater + ``encode_result``), so every amount that lands in the
warehouse is checked against an independent computation.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from processor.chunk_result import encode_result, result_blob_name
from processor.rating import rater_for, subtotals
from shared.batch_records import BatchRecord, BatchRecords, BatchStatus
from shared.messages import ChunkFailed, ChunkResult
from shared.pricebook import sample_pricebook
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from shared.transactions import ControlTotals, ControlTotalsBuilder, Transaction

SAMPLE_BOOK_PATH = Path(__file__).resolve().parents[2] / "shared" / "pricebooks" / "sample.json"
BOOK: dict[str, Any] = json.loads(SAMPLE_BOOK_PATH.read_text(encoding="utf-8"))
CURRENCY: str = BOOK["currency"]  # USD: two decimals
INVOICE_FIGURES = ("lines", "quantity", "gross", "discount", "net", "tax", "total")


def _round(value: Decimal) -> int:
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def reference_charge(tx: Transaction) -> dict[str, Any]:
    """Design §6, line by line, on the pricebook's JSON."""
    sku = BOOK["skus"][tx.sku]
    unit_price = _round(Decimal(sku["unit_price"]) * 100)
    gross = unit_price * tx.quantity
    reached = [t for t in sku["tiers"] if t["min_quantity"] <= tx.quantity]
    pct = (
        Decimal(max(reached, key=lambda t: t["min_quantity"])["discount_pct"])
        if reached
        else Decimal(0)
    )
    discount = _round(Decimal(gross) * pct / 100)
    net = gross - discount
    tax = _round(Decimal(net) * Decimal(BOOK["regions"][tx.region]["tax_pct"]) / 100)
    return {
        "transaction_id": tx.transaction_id,
        "customer_id": tx.customer_id,
        "sku": tx.sku,
        "region": tx.region,
        "quantity": tx.quantity,
        "occurred_at": tx.occurred_at,
        "currency": CURRENCY,
        "unit_price": unit_price,
        "gross": gross,
        "discount": discount,
        "net": net,
        "tax": tax,
        "total": net + tax,
    }


def reference_invoices(transactions: list[Transaction]) -> dict[str, dict[str, int]]:
    """Per customer: the sums of the reference charges."""
    invoices: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(INVOICE_FIGURES, 0))
    for tx in transactions:
        charge = reference_charge(tx)
        invoice = invoices[tx.customer_id]
        invoice["lines"] += 1
        for figure in INVOICE_FIGURES[1:]:
            invoice[figure] += charge[figure]
    return dict(invoices)


def make_transactions(count: int, *, seed: int = 7, customers: int = 6) -> list[Transaction]:
    """Varied transactions: every SKU and region, quantities around every tier threshold."""
    draw = random.Random(seed)
    skus = sorted(BOOK["skus"])
    regions = sorted(BOOK["regions"])
    start = datetime(2025, 6, 1, tzinfo=UTC)
    transactions = []
    for number in range(count):
        sku = skus[number % len(skus)]
        thresholds = [t["min_quantity"] for t in BOOK["skus"][sku]["tiers"]]
        around = draw.choice([*thresholds, 1, 7]) if thresholds else draw.choice([1, 2, 3])
        quantity = max(1, around + draw.choice([-1, 0, 0, 1, 13]))
        transactions.append(
            Transaction(
                transaction_id=f"tx-{seed}-{number:05d}",
                customer_id=f"cust-{draw.randrange(customers):02d}",
                sku=sku,
                quantity=quantity,
                region=regions[draw.randrange(len(regions))],
                occurred_at=start + timedelta(minutes=number),
            )
        )
    return transactions


def control_totals(transactions: list[Transaction]) -> ControlTotals:
    builder = ControlTotalsBuilder()
    for tx in transactions:
        builder.add(tx.transaction_id, tx.quantity)
    return builder.build()


@dataclass
class PublishedBatch:
    """A batch as intake and the processors would have left it for the controller."""

    batch_id: str
    transactions: list[Transaction]
    chunks: list[list[Transaction]]
    results: list[ChunkResult]

    def chunk_failed(self, chunk: int, error: str = "ValueError: boom") -> ChunkFailed:
        return ChunkFailed(
            batch_id=self.batch_id, chunk=chunk, poison_queue="work-normal-0-poison", error=error
        )


def publish_batch(
    storage: StorageAccount,
    settings: Settings,
    batch_id: str,
    transactions: list[Transaction],
    *,
    chunk_size: int,
    control: ControlTotals | None = None,
) -> PublishedBatch:
    """Write the accepted batch record and every chunk's result blob; return the messages."""
    chunks = [transactions[i : i + chunk_size] for i in range(0, len(transactions), chunk_size)]
    book = sample_pricebook()
    now = datetime.now(UTC)
    BatchRecords(storage.table(settings.batches_table)).create(
        BatchRecord(
            batch_id=batch_id,
            status=BatchStatus.ACCEPTED,
            priority="normal",
            pricebook_version=book.version_hash(),
            received_at=now - timedelta(seconds=1),
            accepted_at=now,
            transactions=len(transactions),
            chunks=len(chunks),
            control_totals=control or control_totals(transactions),
        )
    )
    rater = rater_for(book)
    results = storage.container(settings.results_container)
    messages = []
    for index, chunk in enumerate(chunks):
        charges = [(2 + i, tx.occurred_at, rater.rate(tx)) for i, tx in enumerate(chunk)]
        blob = encode_result(
            batch_id=batch_id,
            chunk=index,
            currency=book.currency,
            pricebook_version=book.version_hash(),
            charges=charges,
            subtotals=subtotals(charge for _, _, charge in charges),
        )
        name = result_blob_name(batch_id, index)
        results.put(name, blob)
        messages.append(
            ChunkResult(
                batch_id=batch_id,
                chunk=index,
                result_blob=name,
                transactions=len(chunk),
                sha256=hashlib.sha256(blob).hexdigest(),
                processor="test-processor",
            )
        )
    return PublishedBatch(batch_id, transactions, chunks, messages)
