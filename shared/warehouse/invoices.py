"""Reading invoices back: one page of a batch's per-customer totals, from the warehouse.

Used by ``GET /batches/{id}/invoices`` (and through it ``billing invoices``). Pages are
stable: ordered by customer id, or by total (largest first, customer id breaking ties).

A batch's invoices are written when it closes, in the transaction that closes it
(:mod:`controller.reconciliation`): a batch still processing has none yet (an empty page,
``total_invoices`` 0), a closed one has all of them at once, final. A batch closed
``failed`` has the invoices of its applied chunks; if its poisoned chunks are redriven and
applied, its second close writes them anew.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from pydantic import BaseModel, Field
from sqlalchemy import Engine, func, inspect, select

from shared.domain.charges import CustomerSubtotal
from shared.warehouse.models import Invoice

InvoiceOrder = Literal["customer", "total"]
MAX_PAGE_SIZE = 1000


class WarehouseNotReadyError(RuntimeError):
    """The warehouse has no schema yet: no controller has started, no upgrade was run."""


@dataclass(frozen=True, slots=True)
class InvoiceLine(CustomerSubtotal):
    """One customer's invoice in a batch: its sums, in minor units of ``currency``."""

    currency: str


class InvoicePage(BaseModel):
    batch_id: str
    total_invoices: int = Field(
        description="invoices of the batch: written when it closes, none while it processes"
    )
    offset: int
    limit: int
    order: InvoiceOrder
    invoices: list[InvoiceLine]


class InvoiceReader:
    """Pages through invoices; checks once that the warehouse has been migrated."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._ready = False

    def page(
        self,
        batch_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        order: InvoiceOrder = "customer",
    ) -> InvoicePage:
        if not 1 <= limit <= MAX_PAGE_SIZE:
            raise ValueError(f"limit must be 1 to {MAX_PAGE_SIZE}, not {limit}")
        if offset < 0:
            raise ValueError(f"offset must not be negative, not {offset}")
        self._check_ready()
        ordering = (
            (Invoice.customer_id,)
            if order == "customer"
            else (Invoice.total.desc(), Invoice.customer_id)
        )
        columns = [Invoice.__table__.c[field.name] for field in fields(InvoiceLine)]
        with self._engine.connect() as connection:
            count = connection.scalar(
                select(func.count()).select_from(Invoice).where(Invoice.batch_id == batch_id)
            )
            rows = connection.execute(
                select(*columns)
                .where(Invoice.batch_id == batch_id)
                .order_by(*ordering)
                .limit(limit)
                .offset(offset)
            ).all()
        return InvoicePage(
            batch_id=batch_id,
            total_invoices=int(count or 0),
            offset=offset,
            limit=limit,
            order=order,
            invoices=[InvoiceLine(**row._mapping) for row in rows],
        )

    def _check_ready(self) -> None:
        if self._ready:
            return
        if not inspect(self._engine).has_table(Invoice.__tablename__):
            raise WarehouseNotReadyError(
                "the warehouse has no tables yet: start a controller or run "
                "`billing warehouse upgrade`"
            )
        self._ready = True
