"""Batches for the controller tests: varied transactions and what the processors leave.

The result blobs the controller reads are made the way a processor makes them (production
rater + ``encode_result``); the tests check every amount that lands in the warehouse against
the suite's independent reference rater (:mod:`tests.support.reference_rater`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from processor.rating import rater_for
from shared.contracts.batch_records import BatchRecord, BatchRecords
from shared.contracts.batch_status import BatchStatus
from shared.contracts.chunk_result import encode_result, result_blob_name
from shared.contracts.messages import ChunkFailed, ChunkResult
from shared.domain.charges import subtotals
from shared.domain.pricebook import sample_pricebook
from shared.domain.transactions import ControlTotals, ControlTotalsBuilder, Transaction
from shared.settings import Settings
from shared.storage.ports import StorageAccount
from tests.support.reference_rater import SAMPLE_BOOK


def make_transactions(count: int, *, seed: int = 7, customers: int = 6) -> list[Transaction]:
    """Varied transactions: every SKU and region, quantities around every tier threshold."""
    draw = random.Random(seed)
    skus = sorted(SAMPLE_BOOK["skus"])
    regions = sorted(SAMPLE_BOOK["regions"])
    start = datetime(2025, 6, 1, tzinfo=UTC)
    transactions = []
    for number in range(count):
        sku = skus[number % len(skus)]
        thresholds = [t["min_quantity"] for t in SAMPLE_BOOK["skus"][sku]["tiers"]]
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
    callback: str | None = None,
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
            callback=callback,
        )
    )
    rater = rater_for(book)
    results = storage.container(settings.results_container)
    messages = []
    for index, chunk in enumerate(chunks):
        charges = [(tx.occurred_at, rater.rate(tx)) for tx in chunk]
        blob = encode_result(
            batch_id=batch_id,
            chunk=index,
            currency=book.currency,
            pricebook_version=book.version_hash(),
            charges=charges,
            subtotals=subtotals(charge for _, charge in charges),
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
