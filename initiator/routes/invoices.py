"""``GET /batches/{id}/invoices``: a batch's per-customer totals, a page at a time.

The invoices live in the warehouse (the controller writes them from the batch's charges
when it closes the batch), so this is the one route of the initiator that reads SQL. While
a batch is processing the page is empty; once its status is ``completed`` (or ``failed``)
it holds every invoice, final.
A warehouse that is locked or down answers 503 with ``Retry-After`` (see
:mod:`initiator.errors`), never a 500.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query

from initiator.auth import require_api_key
from initiator.dependencies import Services, get_services
from initiator.errors import WAREHOUSE_RETRY_AFTER_SECONDS, problem
from initiator.routes.batches import BATCH_ID_PATTERN
from initiator.schemas import ProblemDetails
from shared.warehouse.invoices import (
    MAX_PAGE_SIZE,
    InvoiceOrder,
    InvoicePage,
    WarehouseNotReadyError,
)

router = APIRouter(tags=["batches"], dependencies=[Depends(require_api_key)])

#: The largest offset SQL takes (a signed 64-bit integer); beyond it SQLite overflows.
MAX_OFFSET = 2**63 - 1


@router.get(
    "/batches/{batch_id}/invoices",
    name="get_batch_invoices",
    operation_id="getBatchInvoices",
    summary="List a batch's invoices",
    response_model=InvoicePage,
    responses={404: {"model": ProblemDetails}, 503: {"model": ProblemDetails}},
)
def get_batch_invoices(
    batch_id: Annotated[str, Path(pattern=BATCH_ID_PATTERN)],
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 100,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    order: Annotated[InvoiceOrder, Query(description="customer id, or largest total")] = (
        "customer"
    ),
    services: Services = Depends(get_services),
) -> Any:
    """The batch's per-customer totals, a page at a time, by customer id or largest total.
    They are written when the batch closes: while it is processing the page is empty."""
    if services.records.find(batch_id) is None:
        return problem(404, "Batch not found", f"no batch {batch_id!r}", kind="batch-not-found")
    try:
        return services.invoices.page(batch_id, limit=limit, offset=offset, order=order)
    except WarehouseNotReadyError as error:
        retry_after = {"Retry-After": str(WAREHOUSE_RETRY_AFTER_SECONDS)}
        return problem(
            503,
            "Warehouse not ready",
            str(error),
            kind="warehouse-unavailable",
            headers=retry_after,
        )
