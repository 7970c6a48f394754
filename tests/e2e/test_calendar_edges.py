"""Timestamps at the ends of the calendar, from ``POST /batches`` to the warehouse.

A line whose ``occurred_at`` the warehouse cannot store (its UTC instant past year 9999)
must be refused at intake with its line number: accepted, it would fail its chunk in the
controller on every delivery until the chunk reached the poison queue and the batch ended
``failed``. The last storable instants on both sides go all the way through and are stored
as the same UTC instants, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from shared.warehouse import make_engine
from shared.warehouse.models import Charge
from tests.api.batch_files import csv_file, row
from tests.e2e.conftest import SettingsFactory
from tests.e2e.pipeline import running_pipeline

EDGES = {
    "tx-edge-1": "9999-12-31T23:59:59.999999Z",
    "tx-edge-2": "9999-12-31T23:59:59+23:59",
    "tx-edge-3": "9999-12-31T11:59:59-12:00",
    "tx-edge-4": "0001-01-01T00:00:00Z",
    "tx-edge-5": "0001-01-01T00:00:00-23:59",
}
CSV = {"Content-Type": "text/csv"}


def test_an_unstorable_timestamp_is_refused_and_the_edges_are_stored(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(chunk_size=3)
    with running_pipeline(settings, processors=1) as pipeline:
        poisoned = [row(1), row(2), row(3, occurred_at="9999-12-31T23:59:59-23:59"), row(4)]
        refused = pipeline.client.post("/batches", content=csv_file(poisoned), headers=CSV)
        assert refused.status_code == 422, refused.text
        (problem,) = refused.json()["problems"]
        assert (problem["line"], problem["field"]) == (4, "occurred_at")
        assert "outside the range the warehouse stores" in problem["reason"]

        edges = [
            row(n, transaction_id=tid, occurred_at=when)
            for n, (tid, when) in enumerate(EDGES.items())
        ]
        accepted = pipeline.client.post("/batches", content=csv_file(edges), headers=CSV)
        assert accepted.status_code == 202, accepted.text
        batch_id = accepted.json()["batch_id"]
        status = pipeline.wait_until_closed(batch_id)
        assert (status["status"], status["reconciled"], status["failed_chunks"]) == (
            "completed",
            True,
            [],
        )

    engine = make_engine(settings.resolved_warehouse_url)
    try:
        with engine.connect() as connection:
            stored = dict(
                connection.execute(
                    select(Charge.transaction_id, Charge.occurred_at).where(
                        Charge.batch_id == batch_id
                    )
                ).all()
            )
    finally:
        engine.dispose()
    assert stored == {
        tid: datetime.fromisoformat(when).astimezone(UTC) for tid, when in EDGES.items()
    }
