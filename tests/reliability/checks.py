"""What every reliability test checks at the end: each batch in the warehouse exactly once."""

from __future__ import annotations

from azure.core.exceptions import ResourceNotFoundError
from sqlalchemy import func, select

from shared.listener.source import poison_queue
from shared.settings import Settings
from shared.storage import open_storage
from shared.warehouse import make_engine
from shared.warehouse.models import Charge
from tests.reliability.client import Submission


def assert_completed_once(
    settings: Settings,
    submissions: list[Submission],
    *,
    transactions: int,
    warehouse_url: str | None = None,
) -> None:
    """The warehouse holds each submission's batch with all its ``transactions``, no other
    batch, no order id twice; nothing is left in the output queue's poison queue."""
    engine = make_engine(warehouse_url or settings.resolved_warehouse_url)
    try:
        with engine.connect() as connection:
            rows_per_batch = dict(
                connection.execute(
                    select(Charge.batch_id, func.count()).group_by(Charge.batch_id)
                ).all()
            )
            order_ids = connection.scalars(select(Charge.order_id)).all()
    finally:
        engine.dispose()
    assert rows_per_batch == {s.batch_id: transactions for s in submissions}
    assert len(set(order_ids)) == len(order_ids)
    storage = open_storage(settings.model_copy(update={"faults": None}))  # to look, not to fail
    try:
        poisoned = storage.queue(poison_queue(settings.output_queue)).peek()
    except ResourceNotFoundError:
        poisoned = []  # made on first use: nothing was ever poisoned
    finally:
        storage.close()
    assert poisoned == []
