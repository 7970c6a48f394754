"""Helpers for the batch-parser tests: build batch files by hand and parse them.

The test data is written here, field by field, never by the production code under test.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from initiator.intake import BatchRejected, parse_batch
from shared.domain.pricebook import Pricebook, load_pricebook
from shared.domain.transactions import Transaction

HEADER = "transaction_id,customer_id,sku,quantity,region,occurred_at"
FIELDS = HEADER.split(",")
PRICEBOOK: Pricebook = load_pricebook(
    json.dumps(
        {
            "currency": "USD",
            "skus": {"SKU-1": {"unit_price": "1.00"}, "API-CALLS": {"unit_price": "0.02"}},
            "regions": {"EU": {"tax_pct": "20"}, "US": {"tax_pct": "8"}},
        }
    )
)


def row(
    transaction_id: str = "T1",
    customer_id: str = "C1",
    sku: str = "SKU-1",
    quantity: str = "5",
    region: str = "EU",
    occurred_at: str = "2026-01-05T10:00:00Z",
) -> str:
    return ",".join((transaction_id, customer_id, sku, quantity, region, occurred_at))


def csv_body(*rows: str, header: str = HEADER, newline: str = "\n") -> bytes:
    return "".join(f"{line}{newline}" for line in (header, *rows)).encode()


def jsonl_body(*objects: object) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in objects).encode()


def record(**overrides: object) -> dict[str, object]:
    item: dict[str, object] = {
        "transaction_id": "T1",
        "customer_id": "C1",
        "sku": "SKU-1",
        "quantity": 5,
        "region": "EU",
        "occurred_at": "2026-01-05T10:00:00Z",
    }
    item.update(overrides)
    return item


def transaction(
    transaction_id: str = "T1",
    customer_id: str = "C1",
    sku: str = "SKU-1",
    quantity: int = 5,
    region: str = "EU",
    occurred_at: str = "2026-01-05T10:00:00+00:00",
) -> Transaction:
    return Transaction(
        transaction_id, customer_id, sku, quantity, region, datetime.fromisoformat(occurred_at)
    )


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def parse(
    body: bytes | Iterable[bytes],
    content_type: str | None = "text/csv",
    content_encoding: str | None = None,
    **options: Any,
) -> tuple[list[tuple[int, Transaction]], BatchRejected | None]:
    chunks = [body] if isinstance(body, bytes) else body
    reader = parse_batch(
        chunks,
        content_type=content_type,
        content_encoding=content_encoding,
        pricebook=PRICEBOOK,
        **options,
    )
    transactions = list(reader)
    return transactions, reader.rejection()


def accepted(body: bytes | Iterable[bytes], **options: Any) -> list[tuple[int, Transaction]]:
    transactions, rejection = parse(body, **options)
    assert rejection is None, rejection.body()
    return transactions


def rejected(body: bytes | Iterable[bytes], **options: Any) -> BatchRejected:
    _, rejection = parse(body, **options)
    assert rejection is not None, "the batch was accepted"
    return rejection


def only_problem(rejection: BatchRejected) -> tuple[int | None, str | None, str]:
    """The single problem of a rejection, as (line, field, reason)."""
    assert len(rejection.problems) == 1, rejection.body()
    problem = rejection.problems[0]
    return problem.line, problem.field, problem.reason
