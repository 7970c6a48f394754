"""``POST /batches`` (take a batch file) and ``GET /batches/{id}`` (what is known about it).

The POST handler stays on the event loop only to check the headers; the body is read,
validated and published by :class:`~initiator.acceptance.BatchAcceptance` in a worker
thread that pulls the body through :class:`~initiator.body.BlockingBody`.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Path, Query, Request, status
from fastapi.responses import JSONResponse

from initiator.acceptance import BatchRequest
from initiator.auth import require_api_key
from initiator.body import BlockingBody
from initiator.dependencies import Services, get_services
from initiator.errors import problem, too_large
from initiator.idempotency import MAX_KEY_LENGTH
from initiator.schemas import BatchAccepted, BatchStatusView, ProblemDetails
from shared.contracts.batch_records import BatchRecord
from shared.domain.priority import Priority

router = APIRouter(tags=["batches"], dependencies=[Depends(require_api_key)])

BATCH_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


@router.post(
    "/batches",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=BatchAccepted,
    responses={
        200: {"model": BatchAccepted, "description": "The same batch again (Idempotency-Key)"},
        **{code: {"model": ProblemDetails} for code in (400, 409, 413, 415, 422, 503)},
    },
)
async def submit_batch(
    request: Request,
    priority: Annotated[Priority, Query(description="the batch's work queues")] = "normal",
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            max_length=MAX_KEY_LENGTH,
            description="same key and same body: the same batch, never processed twice",
        ),
    ] = None,
    services: Services = Depends(get_services),
) -> Any:
    """Take a batch file (CSV or JSON Lines, optionally gzip): 202 once it is on the queues."""
    limit = services.settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return too_large(limit)  # before reading a byte
    batch = BatchRequest(
        priority=priority,
        content_type=request.headers.get("content-type"),
        content_encoding=request.headers.get("content-encoding"),
        idempotency_key=idempotency_key,
    )
    body = BlockingBody(request.stream(), limit=limit)
    outcome = await anyio.to_thread.run_sync(partial(services.acceptance.accept, body, batch))
    status_url = str(request.url_for("get_batch", batch_id=outcome.record.batch_id))
    answer = _accepted(outcome.record, status_url)
    return JSONResponse(
        answer.model_dump(mode="json"),
        status_code=status.HTTP_200_OK if outcome.replayed else status.HTTP_202_ACCEPTED,
        headers={"Location": status_url},
    )


@router.get(
    "/batches/{batch_id}",
    name="get_batch",
    response_model=BatchStatusView,
    responses={404: {"model": ProblemDetails}},
)
def get_batch(
    batch_id: Annotated[str, Path(pattern=BATCH_ID_PATTERN)],
    services: Services = Depends(get_services),
) -> Any:
    stored = services.records.find(batch_id)
    if stored is None:
        return problem(404, "Batch not found", f"no batch {batch_id!r}")
    return BatchStatusView.of(stored.record)


def _accepted(record: BatchRecord, status_url: str) -> BatchAccepted:
    return BatchAccepted(
        batch_id=record.batch_id,
        transactions=record.transactions,
        chunks=record.chunks,
        priority=record.priority,
        status_url=status_url,
    )
