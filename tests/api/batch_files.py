"""Small batch files for the API tests, and the transactions they must yield."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence

from shared.contracts.chunk_payload import NumberedTransaction
from tests.support.transaction_rows import transaction_from_row

COLUMNS = ("transaction_id", "customer_id", "sku", "quantity", "region", "occurred_at")
Row = dict[str, str]


def row(number: int, **overrides: str) -> Row:
    """A valid row (for the sample pricebook); keywords replace fields."""
    values = {
        "transaction_id": f"tx-{number:05d}",
        "customer_id": f"cust-{number % 7}",
        "sku": ("SEAT-PRO", "API-CALLS", "STORAGE-GB")[number % 3],
        "quantity": str(number % 50 + 1),
        "region": ("EU", "US", "JP")[number % 3],
        "occurred_at": f"2025-03-01T10:{number % 60:02d}:00+02:00",
    }
    return {**values, **overrides}


def rows(count: int) -> list[Row]:
    return [row(number) for number in range(count)]


def csv_file(
    items: Sequence[Row],
    *,
    columns: Sequence[str] = COLUMNS,
    newline: str = "\n",
    final_newline: bool = True,
) -> bytes:
    lines = [",".join(columns)] + [",".join(item.get(c, "") for c in columns) for item in items]
    text = newline.join(lines) + (newline if final_newline else "")
    return text.encode()


def jsonl_file(items: Sequence[Row]) -> bytes:
    lines = [
        json.dumps({**item, "quantity": int(item["quantity"])}, separators=(",", ":"))
        for item in items
    ]
    return ("\n".join(lines) + "\n").encode()


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data)


def expected(items: Sequence[Row], first_line: int = 2) -> list[NumberedTransaction]:
    """The numbered transactions a file of ``items`` holds (the CSV header is line 1)."""
    return [(first_line + index, transaction_from_row(item)) for index, item in enumerate(items)]
