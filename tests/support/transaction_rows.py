"""A batch file's row, read back with the standard library, as a :class:`Transaction`.

Tests compute what they expect from the rows that ``csv`` or ``json`` read, never through the
intake parser under test; this is the one place that turns such a row into a transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from shared.domain.transactions import Transaction


def transaction_from_row(row: Mapping[str, Any]) -> Transaction:
    """The transaction a row of named fields holds (CSV text or JSON values alike)."""
    return Transaction(
        transaction_id=row["transaction_id"],
        customer_id=row["customer_id"],
        sku=row["sku"],
        quantity=int(row["quantity"]),
        region=row["region"],
        occurred_at=datetime.fromisoformat(row["occurred_at"]),
    )
