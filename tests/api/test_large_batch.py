"""A 1,000,000-transaction CSV through the HTTP stack on the embedded backend."""

from __future__ import annotations

import csv
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from billing.sample_batches import write_batch_file
from shared.domain.transactions import ControlTotalsBuilder
from tests.api.conftest import SettingsFactory
from tests.api.harness import AUTH, started_api

pytestmark = pytest.mark.anyio

TRANSACTIONS = 1_000_000


@pytest.fixture
def backend() -> str:
    return "embedded"


async def _file_blocks(path: Path, size: int = 1024 * 1024) -> AsyncIterator[bytes]:
    with path.open("rb") as source:
        while block := source.read(size):
            yield block


def _expected_totals(path: Path) -> dict[str, int]:
    """The control totals by an independent reading of the file (the ``csv`` module)."""
    totals = ControlTotalsBuilder()
    with path.open(newline="", encoding="utf-8") as source:
        for line in csv.DictReader(source):
            totals.add(line["transaction_id"], int(line["quantity"]))
    return totals.build().model_dump()


async def test_a_million_transactions_are_accepted(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    path = tmp_path / "million.csv"
    write_batch_file(path, TRANSACTIONS, customers=5000, seed=7)
    settings = make_settings(chunk_size=2000)
    async with started_api(settings) as api:
        started = time.perf_counter()
        response = await api.client.post(
            "/batches",
            content=_file_blocks(path),
            headers={**AUTH, "Content-Type": "text/csv"},
            timeout=None,
        )
        elapsed = time.perf_counter() - started
        assert response.status_code == 202, response.text
        answer = response.json()
        print(f"\naccepted {TRANSACTIONS:,} transactions in {elapsed:.1f} s")
        assert answer["transactions"] == TRANSACTIONS
        assert answer["chunks"] == TRANSACTIONS // 2000
        view = (await api.client.get(answer["status_url"], headers=AUTH)).json()
        assert view["control_totals"] == _expected_totals(path)
        assert sum(api.trace().queue_depths.values()) == answer["chunks"]
