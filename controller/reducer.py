"""The reduce step: apply one rated chunk to the warehouse, exactly once.

A chunk's result may arrive twice (a redelivered message, a controller that crashed between
the commit and the message delete, two controllers that took the same message after a
visibility timeout). The effect must land once. One database transaction therefore does all
of it:

1. insert the chunk's **applied mark** (primary key ``(batch_id, chunk)``), with the chunk's
   partial id checksum over the very rows step 2 loads (the batch's reconciliation sums
   these partials instead of re-reading every id, :mod:`controller.reconciliation`). The
   processor that rated the rows computed it and sent it with them in the result blob,
   whose sha256 the controller checked; a result without one (an older processor's) has
   it computed here,
2. bulk-load the chunk's charges with their order ids (:mod:`controller.charge_loader`:
   ``COPY`` on PostgreSQL; on SQLite one ``INSERT … SELECT`` from the result's database
   image, or multi-row ``INSERT`` statements of tuples),
3. add the chunk's per-customer subtotals to ``invoices`` (an upsert). On SQLite, when they
   are the attached result image's own (:class:`~shared.contracts.result_table.ImageSubtotals`),
   one ``INSERT … SELECT … ON CONFLICT`` adds them from the image: no Python object per
   customer, whose number grows with the batch's distinct customers, not its rows.

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
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from itertools import repeat
from operator import add, attrgetter, itemgetter
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, exists, func, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError

from controller.charge_loader import ATTACHED, attached_result, copy_charges, load_charges
from shared.contracts.chunk_result import COLUMNS, ChargeRow, ResultRow
from shared.contracts.result_table import SUBTOTAL_FIGURES, ImageSubtotals, ResultTable
from shared.domain.charges import CHARGE_FIELDS, INVOICE_SUMS, CustomerSubtotal
from shared.domain.transactions import id_checksum_of
from shared.domain.utc_text import utc_text
from shared.warehouse import id_checksum_halves
from shared.warehouse.models import AppliedChunk, Charge, Invoice
from shared.warehouse.sqlite_rows import insert_rows

log = logging.getLogger(__name__)

_charge_values = attrgetter(*CHARGE_FIELDS)
_subtotal_values = attrgetter(*INVOICE_SUMS)
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
    """:func:`apply_rows` for charges and subtotals given as objects (tests, tools).

    Each ``occurred_at`` must be aware; it is written as UTC text.
    """
    rows = [(utc_text(row.occurred_at), *_charge_values(row.charge)) for row in charges]
    sums = {s.customer_id: list(_subtotal_values(s)) for s in subtotals}
    return apply_rows(
        engine,
        batch_id=batch_id,
        chunk=chunk,
        rows=rows,
        subtotals=sums,
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
    subtotals: Mapping[str, Sequence[int]],
    currency: str,
    allocator: IdSource,
    processor: str,
    id_checksum: int | None = None,
) -> bool:
    """Apply one chunk's result; ``True`` if this call applied it, ``False`` if it already was.

    ``rows`` are the result's rows (``shared.contracts.chunk_result.COLUMNS``: occurred_at as
    UTC text, transaction_id, …, total) and ``subtotals`` map each customer of the
    chunk to its :data:`INVOICE_SUMS`, summing ``rows``. Either way, once this returns, the
    chunk is in the warehouse exactly once and the result message may be deleted. The
    batch's ``batches`` row must exist (foreign key).
    """
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
            if attached and _from_image(subtotals, table):
                _add_image_subtotals(connection, batch_id, currency)
            else:
                _add_to_invoices(connection, batch_id, subtotals, currency)
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


def _from_image(subtotals: Mapping[str, Sequence[int]], table: ResultTable | None) -> bool:
    """Whether ``subtotals`` are the very image ``table`` is (its ``subtotals`` table)."""
    return (
        isinstance(subtotals, ImageSubtotals)
        and table is not None
        and subtotals.image is table.image
    )


def _add_to_invoices(
    connection: Connection,
    batch_id: str,
    subtotals: Mapping[str, Sequence[int]],
    currency: str,
) -> None:
    width = len(INVOICE_SUMS)
    if any(len(values) != width for values in subtotals.values()):
        raise ValueError(f"a customer's subtotals must be {width} figures: {INVOICE_SUMS}")
    rows = [
        (batch_id, customer_id, currency, *subtotals[customer_id])
        # Sorted: concurrent chunks of one batch then lock the invoice rows they share
        # in the same order, so two PostgreSQL transactions cannot deadlock on them.
        for customer_id in sorted(subtotals)
    ]
    if not rows:
        return
    if connection.dialect.name == "sqlite":
        # Statements of many rows, not executemany's one step a row: shared.warehouse.sqlite_rows.
        insert_rows(connection, _INVOICES_INTO, len(_INVOICE_COLUMNS), rows, then=_ADD_ON_CONFLICT)
    else:
        # The driver's own executemany of tuples: about a third of the CPU of SQLAlchemy's
        # insert of one dict per customer (bench.charge_load measures the same for charges).
        connection.exec_driver_sql(_invoice_upsert(connection.dialect.paramstyle), rows)


_INVOICE_COLUMNS = ("batch_id", "customer_id", "currency", *INVOICE_SUMS)
_INVOICES_INTO = f"INSERT INTO {Invoice.__tablename__} ({', '.join(_INVOICE_COLUMNS)})"
#: What turns the insert into ``invoices.x + new.x`` for a customer already invoiced.
_ADD_ON_CONFLICT = "ON CONFLICT (batch_id, customer_id) DO UPDATE SET " + ", ".join(
    f"{name} = {Invoice.__tablename__}.{name} + excluded.{name}" for name in INVOICE_SUMS
)
#: The attached image's subtotals added to ``invoices`` in one statement, in customer order
#: (the image's primary key: concurrent chunks lock shared invoice rows in one order).
#: ``WHERE true`` tells SQLite's parser the ``ON CONFLICT`` is the upsert's, not a join's.
_ADD_IMAGE_SUBTOTALS = (
    f"{_INVOICES_INTO} SELECT ?, customer_id, ?, {', '.join(SUBTOTAL_FIGURES)} "
    f"FROM {ATTACHED}.subtotals WHERE true ORDER BY customer_id {_ADD_ON_CONFLICT}"
)


def _add_image_subtotals(connection: Connection, batch_id: str, currency: str) -> None:
    """Add the attached result image's subtotals to ``invoices``, all in SQLite."""
    dbapi_connection: Any = connection.connection.driver_connection
    dialect = connection.dialect
    try:
        dbapi_connection.execute(_ADD_IMAGE_SUBTOTALS, (batch_id, currency))
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            _ADD_IMAGE_SUBTOTALS, None, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc


@cache
def _invoice_upsert(paramstyle: str) -> str:
    """``INSERT … ON CONFLICT (batch_id, customer_id) DO UPDATE SET x = invoices.x + new.x``,
    one row, with the driver's positional placeholders (``%s`` for psycopg; SQLite's
    upsert goes through :func:`~shared.warehouse.sqlite_rows.insert_rows`)."""
    placeholders = {"format": "%s", "pyformat": "%s"}
    if paramstyle not in placeholders:
        raise NotImplementedError(f"no positional placeholder for paramstyle {paramstyle!r}")
    values = ", ".join(placeholders[paramstyle] for _ in _INVOICE_COLUMNS)
    return f"{_INVOICES_INTO} VALUES ({values}) {_ADD_ON_CONFLICT}"
