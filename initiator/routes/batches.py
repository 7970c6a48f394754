"""``POST /batches`` (take a batch file) and ``GET /batches/{id}`` (what is known about it).

The POST handler stays on the event loop only to check the headers and claim an intake slot
(:mod:`initiator.intake_slots`); the body is read, validated and published by
:class:`~initiator.acceptance.BatchAcceptance` in a worker thread of the intakes' own pool,
which pulls the body through :class:`~initiator.body.BlockingBody` at the pace the settings
demand, and stops if the client hangs up (:mod:`initiator.disconnect`).

``Location`` and ``status_url`` are relative (``/batches/{id}``) unless
``BILLING_PUBLIC_BASE_URL`` says where the API is reached: never built from the request's
``Host`` header, which the client chooses.

Next step (docs/walkthrough.md): ``initiator.acceptance``, which takes the request from here
to the queues.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Path, Query, Request, status
from fastapi.responses import JSONResponse

from initiator.acceptance import BatchRequest, Outcome
from initiator.auth import require_api_key, sender_of
from initiator.body import DEFAULT_BLOCK_SIZE, BlockingBody
from initiator.body_pace import BodyPace
from initiator.callbacks import refuse_callback
from initiator.dependencies import Services, get_services
from initiator.disconnect import Watched, unless_client_leaves
from initiator.errors import problem, too_large
from initiator.idempotency import MAX_KEY_LENGTH
from initiator.intake_slots import IntakeSlots
from initiator.observability.readings import Readings
from initiator.openapi import BATCH_FILE_BODY
from initiator.schemas import BatchAccepted, BatchStatusView, ProblemDetails
from initiator.uploads.blob_body import BlobBody
from initiator.uploads.reference import names_an_upload, read_reference
from shared.contracts.batch_records import BatchRecord
from shared.domain.priority import Priority
from shared.settings import Settings

router = APIRouter(tags=["batches"], dependencies=[Depends(require_api_key)])

BATCH_ID_PATTERN = r"^[A-Za-z0-9_.:-]{1,64}$"


@router.post(
    "/batches",
    status_code=status.HTTP_202_ACCEPTED,
    operation_id="submitBatch",
    summary="Submit a batch file",
    response_model=BatchAccepted,
    responses={
        200: {"model": BatchAccepted, "description": "The same batch again (Idempotency-Key)"},
        **{code: {"model": ProblemDetails} for code in (400, 404, 408, 409, 413, 415, 422, 503)},
    },
    openapi_extra={"requestBody": BATCH_FILE_BODY},
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
    callback: Annotated[
        str | None,
        Query(description="a URL to POST the batch's outcome event to (docs/events.md)"),
    ] = None,
    allow_duplicate: Annotated[
        bool,
        Query(
            description="accept a body identical to one accepted recently, or transaction ids "
            "accepted recently (billed twice)"
        ),
    ] = False,
    services: Services = Depends(get_services),
) -> Any:
    """Take a batch file (CSV or JSON Lines, optionally gzip) and answer 202 once every chunk
    is on its work queue. The whole file is validated first: a bad line, a missing column,
    a duplicate ``transaction_id`` or an oversize body rejects the batch (a problem naming the
    lines and reasons) and leaves no trace. The same ``Idempotency-Key`` with the same body
    answers 200 with the batch already accepted; the same body without a key, within a day
    of the first, answers 409 naming it unless ``allow_duplicate`` is set; with
    ``BILLING_DUPLICATE_TRANSACTION_IDS`` so does a body holding a transaction id accepted
    in another batch within that day.

    With ``Content-Type: application/json`` and ``{"upload": blob}``, the file is the blob
    uploaded to a ``POST /uploads`` grant, taken through the same intake; the blob is
    deleted once the batch is accepted or rejected, and an upload makes one batch only
    (404: never granted; 409: not uploaded yet, or used already)."""
    settings = services.settings
    if callback is not None:
        refused = await anyio.to_thread.run_sync(refuse_callback, callback, settings)
        if refused is not None:
            return refused  # before reading a byte
    if names_an_upload(request.headers.get("content-type")):
        reference = await read_reference(request)
        # Blocks of the size the body is read in: the intake after is then the same.
        blocks = services.uploads.container.read_blocks(reference.upload, DEFAULT_BLOCK_SIZE)
        upload = BlobBody(blocks, limit=settings.max_body_bytes)
        batch = BatchRequest(
            priority=priority,
            content_type=reference.content_type,
            content_encoding=reference.content_encoding,
            idempotency_key=idempotency_key,
            checkpoint=upload.checkpoint,
            callback=callback,
            allow_duplicate=allow_duplicate,
        )
        accept = partial(services.uploads.intake.accept, reference.upload, upload, batch)
        return await _take(request, upload, accept)
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return too_large(limit)  # before reading a byte
    pace = BodyPace(
        idle_timeout=settings.request_body_idle_timeout_seconds,
        min_bytes_per_second=settings.request_body_min_bytes_per_second,
    )
    body = BlockingBody(request.stream(), limit=limit, pace=pace)
    batch = BatchRequest(
        priority=priority,
        content_type=request.headers.get("content-type"),
        content_encoding=request.headers.get("content-encoding"),
        idempotency_key=idempotency_key,
        checkpoint=body.checkpoint,
        callback=callback,
        allow_duplicate=allow_duplicate,
    )
    return await _take(request, body, partial(services.acceptance.accept, body, batch))


async def _take(request: Request, body: Watched, accept: Callable[[], Outcome]) -> JSONResponse:
    """Run the intake in a worker thread of the intakes' pool, and answer with its outcome."""
    settings: Settings = request.app.state.services.settings
    slots: IntakeSlots = request.app.state.intake_slots
    with slots.claim(sender_of(request)):
        outcome = await unless_client_leaves(
            request.receive,
            body,
            partial(anyio.to_thread.run_sync, accept, limiter=slots.threads),
        )
    status_url = _status_url(request, outcome.record.batch_id, settings.public_base_url)
    answer = _accepted(outcome.record, status_url)
    return JSONResponse(
        answer.model_dump(mode="json"),
        status_code=status.HTTP_200_OK if outcome.replayed else status.HTTP_202_ACCEPTED,
        headers={"Location": status_url},
    )


@router.get(
    "/batches/{batch_id}",
    name="get_batch",
    operation_id="getBatch",
    summary="Get a batch's status",
    response_model=BatchStatusView,
    responses={404: {"model": ProblemDetails}},
)
def get_batch(
    request: Request,
    batch_id: Annotated[str, Path(pattern=BATCH_ID_PATTERN)],
    services: Services = Depends(get_services),
) -> Any:
    """What is known about the batch now: its status, chunk counts, control totals and, once
    it closes, the warehouse's totals, whether they reconcile, and its timings. ``gate`` says
    whether the release gate holds the processors (the batch waits for a release); the
    timings report the time spent waiting for the release apart from processing.
    ``chunks.rated`` counts the chunks rated so far, applied or still on their way to the
    warehouse."""
    stored = services.records.find(batch_id)
    if stored is None:
        return problem(404, "Batch not found", f"no batch {batch_id!r}", kind="batch-not-found")
    readings: Readings = request.app.state.readings
    return readings.batch(stored.record)


def _status_url(request: Request, batch_id: str, public_base_url: str | None) -> str:
    path = str(request.app.url_path_for("get_batch", batch_id=batch_id))
    if public_base_url:
        return public_base_url.rstrip("/") + path
    return str(request.scope.get("root_path", "")) + path


def _accepted(record: BatchRecord, status_url: str) -> BatchAccepted:
    return BatchAccepted(
        batch_id=record.batch_id,
        transactions=record.transactions,
        chunks=record.chunks,
        priority=record.priority,
        status_url=status_url,
    )
