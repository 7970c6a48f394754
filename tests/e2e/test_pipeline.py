"""Batches through all three roles, checked against the independent reference rater.

Two generated batches — one ``high`` (CSV), one ``low`` (gzip JSON Lines), several chunks
each — go in over HTTP, through the processors and the controller, and every figure that
comes out is checked: each charge row against the reference rater by transaction id, each
invoice against the reference's per-customer sums (in the warehouse and over HTTP), the
order ids, and the control totals against the warehouse totals and an independent count.

Runs on embedded + SQLite and on Azurite + PostgreSQL (see ``conftest.py``).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from billing.sample_batches import write_batch_file
from shared.domain.priority import Priority
from shared.domain.transactions import Transaction
from shared.settings import Settings
from shared.warehouse import make_engine
from shared.warehouse.models import Charge
from tests.controller.checks import (
    assert_charges_match_the_reference,
    assert_invoices_match_the_reference,
    batch_row,
)
from tests.e2e.conftest import SettingsFactory
from tests.e2e.pipeline import running_pipeline
from tests.support.reference_rater import INVOICE_FIGURES, SAMPLE_BOOK, reference_invoices
from tests.support.transaction_rows import transaction_from_row

#: Small enough for Azurite, large enough for several chunks per batch.
CHUNK_SIZE = 50


@dataclass(frozen=True)
class BatchSpec:
    priority: Priority
    transactions: int
    seed: int
    gzip_jsonl: bool

    @property
    def headers(self) -> dict[str, str]:
        if self.gzip_jsonl:
            return {"Content-Type": "application/x-ndjson", "Content-Encoding": "gzip"}
        return {"Content-Type": "text/csv"}


BATCHES = (
    BatchSpec("high", transactions=260, seed=31, gzip_jsonl=False),
    BatchSpec("low", transactions=190, seed=32, gzip_jsonl=True),
)


def write_file(spec: BatchSpec, folder: Path) -> Path:
    suffix = "jsonl.gz" if spec.gzip_jsonl else "csv"
    path = folder / f"{spec.priority}.{suffix}"
    write_batch_file(
        path,
        spec.transactions,
        customers=12,
        seed=spec.seed,
        file_format="jsonl" if spec.gzip_jsonl else "csv",
        gzip=spec.gzip_jsonl,
    )
    return path


def read_transactions(path: Path, spec: BatchSpec) -> list[Transaction]:
    """The file's lines as records, read with the standard library (not the intake parser)."""
    if spec.gzip_jsonl:
        rows: list[dict[str, Any]] = [
            json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()
        ]
    else:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    return [transaction_from_row(row) for row in rows]


def expected_control_totals(transactions: list[Transaction]) -> dict[str, int]:
    """The control totals computed here: count, quantity sum, and the sum modulo
    2**64 of each id's 8-byte blake2b digest read big-endian."""
    checksum = sum(
        int.from_bytes(hashlib.blake2b(tx.transaction_id.encode(), digest_size=8).digest(), "big")
        for tx in transactions
    )
    return {
        "transactions": len(transactions),
        "quantity": sum(tx.quantity for tx in transactions),
        "id_checksum": checksum % 2**64,
    }


def test_two_batches_of_mixed_priority_flow_through_all_roles_and_match_the_reference(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings: Settings = make_settings(chunk_size=CHUNK_SIZE)
    files = {spec: write_file(spec, tmp_path) for spec in BATCHES}
    expected = {spec: read_transactions(path, spec) for spec, path in files.items()}
    assert all(len(expected[spec]) == spec.transactions for spec in BATCHES)

    with running_pipeline(settings, processors=2) as pipeline:
        accepted = {
            spec: pipeline.submit(files[spec], priority=spec.priority, headers=spec.headers)
            for spec in BATCHES
        }
        statuses = {
            spec: pipeline.wait_until_closed(answer["batch_id"])
            for spec, answer in accepted.items()
        }
        http_invoices = {
            spec: pipeline.client.get(
                f"/batches/{answer['batch_id']}/invoices", params={"limit": 100}
            )
            .raise_for_status()
            .json()
            for spec, answer in accepted.items()
        }
        controller = pipeline.controller.snapshot()
        processors = [worker.snapshot().listener for worker in pipeline.processors]

    chunk_total = sum(math.ceil(spec.transactions / CHUNK_SIZE) for spec in BATCHES)
    print(
        f"{chunk_total} chunks; rated per processor {[p.handled for p in processors]}; "
        f"controller applied {controller.chunks_applied}, skipped {controller.chunks_skipped}"
    )
    # Every chunk rated (a redelivery may rate one twice) and applied exactly once.
    assert sum(p.handled for p in processors) >= chunk_total
    assert sum(p.poisoned + p.errors for p in processors) == 0
    assert controller.chunks_applied == chunk_total

    engine = make_engine(settings.resolved_warehouse_url)
    try:
        for spec in BATCHES:
            answer, status, transactions = accepted[spec], statuses[spec], expected[spec]
            batch_id = answer["batch_id"]
            chunks = math.ceil(spec.transactions / CHUNK_SIZE)
            assert (answer["transactions"], answer["chunks"], answer["priority"]) == (
                spec.transactions,
                chunks,
                spec.priority,
            )
            assert chunks > 1

            assert status["status"] == "completed", status
            assert status["priority"] == spec.priority
            assert status["chunks"] == {
                "total": chunks,
                "rated": chunks,
                "applied": chunks,
                "failed": 0,
                "in_flight": 0,
            }
            totals = expected_control_totals(transactions)
            assert status["control_totals"] == totals
            assert status["warehouse_totals"] == totals
            assert status["reconciled"] is True

            row = batch_row(engine, batch_id)
            assert (row["status"], row["priority"], row["reconciled"]) == (
                "completed",
                spec.priority,
                True,
            )
            assert_charges_match_the_reference(engine, batch_id, transactions)
            assert_invoices_match_the_reference(engine, batch_id, transactions)

            reference = reference_invoices(SAMPLE_BOOK, transactions)
            page = http_invoices[spec]
            assert page["total_invoices"] == len(reference) == len(page["invoices"])
            served = {
                invoice["customer_id"]: {name: invoice[name] for name in INVOICE_FIGURES}
                for invoice in page["invoices"]
            }
            assert served == reference

        with engine.connect() as connection:
            order_ids = connection.scalars(select(Charge.order_id)).all()
    finally:
        engine.dispose()
    assert len(order_ids) == sum(spec.transactions for spec in BATCHES)
    assert len(set(order_ids)) == len(order_ids), "order ids are unique across batches"
