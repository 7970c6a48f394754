"""The outbox write: one event row for a batch's outcome, in the closing transaction.

:func:`record_outcome` is called by :mod:`controller.completion` on the connection whose
conditional update just closed the batch, before that transaction commits: the close and
its event land together or not at all. The row's key is the outcome's one event id
(:func:`shared.contracts.batch_event.event_id`); a unique ``(batch_id, type)`` makes a
second event for the same outcome impossible even for a bug.

:func:`record_abandoned` records the outcome the warehouse never sees closed: a batch the
initiator gave up on before accepting it, reported by a ``BatchAbandoned`` message on the
output queue, perhaps more than once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Engine, insert, select
from sqlalchemy.exc import IntegrityError

from shared.contracts.batch_event import Outcome, batch_event, encode
from shared.contracts.messages import BatchAbandoned
from shared.domain.transactions import ControlTotals
from shared.warehouse.models import Batch, OutboxEvent


def record_outcome(
    connection: Connection,
    *,
    batch_id: str,
    outcome: Outcome,
    closed_at: datetime,
    chunks_applied: int,
    failed_chunks: Sequence[int],
    warehouse_totals: ControlTotals,
    reconciled: bool,
    invoice_mismatches: int,
) -> str:
    """Insert the outcome's event row (uncommitted, in the caller's transaction); its id."""
    row = connection.execute(
        select(
            Batch.priority,
            Batch.chunks,
            Batch.control_transactions,
            Batch.control_quantity,
            Batch.control_id_checksum,
        ).where(Batch.batch_id == batch_id)
    ).one()
    event = batch_event(
        batch_id=batch_id,
        outcome=outcome,
        time=closed_at,
        priority=row.priority,
        chunks=row.chunks,
        chunks_applied=chunks_applied,
        failed_chunks=failed_chunks,
        control_totals=ControlTotals(
            transactions=row.control_transactions,
            quantity=row.control_quantity,
            id_checksum=row.control_id_checksum,
        ),
        warehouse_totals=warehouse_totals,
        reconciled=reconciled,
        invoice_mismatches=invoice_mismatches,
    )
    connection.execute(
        insert(OutboxEvent).values(
            event_id=event["id"],
            batch_id=batch_id,
            type=event["type"],
            created_at=closed_at,
            body=encode(event).decode(),
        )
    )
    return str(event["id"])


def record_abandoned(engine: Engine, message: BatchAbandoned) -> bool:
    """Insert the ``abandoned`` event of the batch ``message`` reports; False if it is
    recorded already (a redelivered or re-sent message: the same outcome, the same id).

    The warehouse has no row of the batch (it was never accepted): the event's figures are
    the message's, and the sender's callback is kept on the outbox row for the relay."""
    event = batch_event(
        batch_id=message.batch_id,
        outcome=Outcome.ABANDONED,
        time=message.abandoned_at,
        priority=message.priority,
        chunks=message.chunks,
        chunks_applied=0,
        failed_chunks=(),
        control_totals=message.control_totals,
        warehouse_totals=None,
        reconciled=None,
        reason=message.reason.value,
    )
    recorded = select(OutboxEvent.event_id).where(OutboxEvent.event_id == event["id"])
    try:
        with engine.begin() as connection:
            if connection.scalar(recorded) is not None:
                return False
            connection.execute(
                insert(OutboxEvent).values(
                    event_id=event["id"],
                    batch_id=message.batch_id,
                    type=event["type"],
                    created_at=message.abandoned_at,
                    body=encode(event).decode(),
                    callback=message.callback,
                )
            )
    except IntegrityError:
        return False  # another controller recorded it between the look and the insert
    return True
