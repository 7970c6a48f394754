"""The reduce step: apply one rated chunk to the warehouse, exactly once.

A chunk's result may arrive twice (a redelivered message, a controller that crashed between
the commit and the message delete, two controllers that took the same message after a
visibility timeout). The effect must land once. One database transaction therefore does all
of it:

1. insert the chunk's **applied mark** (primary key ``(batch_id, chunk)``), with the chunk's
   partial id checksum over the very rows step 2 loads (the batch's reconciliation sums
   these partials instead of re-reading every id, :mod:`controller.reconciliation`) and
   its **invoice sums** (:data:`~shared.domain.charges.INVOICE_SUMS` over all its rows:
   the figures the batch's invoices must add up to when the close writes them). The
   processor that rated the rows computed both and sent them with the rows in the result
   blob, whose sha256 the controller checked; a result without a checksum (an older
   processor's) has it computed here,
2. bulk-load the chunk's charges with their order ids (:mod:`controller.charge_loader`:
   ``COPY`` on PostgreSQL; on SQLite one ``INSERT … SELECT`` from the result's database
   image, or multi-row ``INSERT`` statements of tuples).

Invoices are not touched: the close writes them once per batch from its charges.

The mark goes first: a second controller applying the same chunk at the same moment blocks
on that key (PostgreSQL) or on the write lock (SQLite), and when the first commits, its own
insert fails with ``IntegrityError`` and its whole transaction rolls back. That failure
means "already applied", not an error; the caller deletes the message either way.

Order ids are reserved *before* the transaction: a reservation may cost a storage round
trip, and holding database locks across it would stall every other writer. If the process
dies after reserving, those ids are simply never used (order ids may have gaps, never
duplicates). Ids that collide with charges already stored (a counter blob behind the
warehouse) fail the transaction like any conflict, and :class:`OrderIdsInUseError` says so,
so that the caller can move the counter past them and apply again.

Next step (docs/walkthrough.md): ``controller.completion``, which closes the batch once
every chunk is settled.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from itertools import repeat
from operator import add, attrgetter, itemgetter
from typing import Protocol

from sqlalchemy import Engine, exists, func, insert, select
from sqlalchemy.exc import IntegrityError

from controller.charge_loader import attached_result, copy_charges, load_charges
from shared.contracts.chunk_result import COLUMNS, ChargeRow, ResultRow
from shared.contracts.result_table import ResultTable
from shared.domain.charges import CHARGE_FIELDS, INVOICE_SUMS, CustomerSubtotal, invoice_sums_of
from shared.domain.transactions import id_checksum_of
from shared.domain.utc_text import utc_text
from shared.warehouse import id_checksum_halves
from shared.warehouse.models import MARK_SUMS, AppliedChunk, Charge

log = logging.getLogger(__name__)

_charge_values = attrgetter(*CHARGE_FIELDS)
_transaction_id = itemgetter(COLUMNS.index("transaction_id"))


class OrderIdsInUseError(RuntimeError):
    """The order ids a chunk drew are already used by charges in the warehouse: the counter
    blob is behind it. Nothing was written."""


class IdSource(Protocol):
    """Where order ids come from (``shared.coordination.ids.OrderIdAllocator``)."""

    def take(self, count: int) -> Sequence[int]: ...


def apply_chunk(
    engine: Engine,
    *,
    batch_id: str,
    chunk: int,
    charges: Sequence[ChargeRow],
    subtotals: Iterable[CustomerSubtotal],
    currency: str,
    allocator: IdSource,
    processor: str,
) -> bool:
    """:func:`apply_rows` for charges and their per-customer subtotals given as objects
    (tests, tools); the subtotals are summed into the chunk's invoice sums.

    Each ``occurred_at`` must be aware; it is written as UTC text.
    """
    rows = [(utc_text(row.occurred_at), *_charge_values(row.charge)) for row in charges]
    return apply_rows(
        engine,
        batch_id=batch_id,
        chunk=chunk,
        rows=rows,
        invoice_sums=invoice_sums_of(subtotals),
        currency=currency,
        allocator=allocator,
        processor=processor,
    )


def apply_rows(
    engine: Engine,
    *,
    batch_id: str,
    chunk: int,
    rows: Sequence[ResultRow],
    invoice_sums: Sequence[int],
    currency: str,
    allocator: IdSource,
    processor: str,
    id_checksum: int | None = None,
) -> bool:
    """Apply one chunk's result; ``True`` if this call applied it, ``False`` if it already was.

    ``rows`` are the result's rows (``shared.contracts.chunk_result.COLUMNS``: occurred_at as
    UTC text, transaction_id, …, total) and ``invoice_sums`` their :data:`INVOICE_SUMS`
    summed over all of them, as the processor that rated them computed them. Either way,
    once this returns, the chunk is in the warehouse exactly once and the result message
    may be deleted. The batch's ``batches`` row must exist (foreign key).
    """
    if len(invoice_sums) != len(INVOICE_SUMS):
        raise ValueError(f"a chunk's invoice sums must be {len(INVOICE_SUMS)} figures")
    if is_applied(engine, batch_id, chunk):
        return False  # the common redelivery: no ids spent, no write lock taken
    order_ids = allocator.take(len(rows))
    if len(order_ids) != len(rows):
        raise ValueError(f"{len(order_ids)} order ids for {len(rows)} charges")
    if id_checksum is None:
        id_checksum = id_checksum_of(map(_transaction_id, rows))
    high, low = id_checksum_halves.split(id_checksum)
    table = rows if isinstance(rows, ResultTable) else None
    try:
        with (
            engine.connect() as connection,
            attached_result(connection, table) as attached,
            connection.begin(),
        ):
            connection.execute(
                insert(AppliedChunk).values(
                    batch_id=batch_id,
                    chunk=chunk,
                    applied_at=datetime.now(UTC),
                    transactions=len(rows),
                    processor=processor,
                    id_checksum_high=high,
                    id_checksum_low=low,
                    **dict(zip(MARK_SUMS, invoice_sums, strict=True)),
                )
            )
            if rows and attached:
                copy_charges(connection, order_ids, batch_id, chunk, currency)
            elif rows:
                # One tuple per charge in the loader's column order: where it belongs,
                # then the result row, which is exactly the loader's last twelve columns.
                # Joined by map/zip/add, all in C: no Python code runs per row.
                where = zip(order_ids, repeat(batch_id), repeat(chunk), repeat(currency))
                load_charges(connection, map(add, where, rows))
    except IntegrityError:
        # Lost the race to another controller (the mark's key), or something else is
        # wrong (a missing batches row, a transaction id applied from another chunk):
        # only the first is "already applied".
        if is_applied(engine, batch_id, chunk):
            log.info("chunk %s/%d was applied concurrently by another controller", batch_id, chunk)
            return False
        if order_ids and _any_in_use(engine, order_ids):
            raise OrderIdsInUseError(
                f"order ids {order_ids[0]}..{order_ids[-1]} drawn for chunk {batch_id}/{chunk} "
                f"are already used in the warehouse (its highest is "
                f"{highest_order_id(engine)}): the order-id counter is behind it"
            ) from None
        raise
    return True


def highest_order_id(engine: Engine) -> int:
    """The highest order id in the warehouse (0 when it holds no charge): the floor of the
    order-id counter. One index lookup."""
    with engine.connect() as connection:
        return int(connection.scalar(select(func.coalesce(func.max(Charge.order_id), 0))) or 0)


def _any_in_use(engine: Engine, order_ids: Sequence[int]) -> bool:
    """Whether any of ``order_ids`` (ascending) belongs to a stored charge."""
    query = select(exists().where(Charge.order_id.between(order_ids[0], order_ids[-1])))
    with engine.connect() as connection:
        return bool(connection.scalar(query))


def is_applied(engine: Engine, batch_id: str, chunk: int) -> bool:
    """Whether the chunk's mark is in the warehouse (committed)."""
    query = select(exists().where(AppliedChunk.batch_id == batch_id, AppliedChunk.chunk == chunk))
    with engine.connect() as connection:
        return bool(connection.scalar(query))
