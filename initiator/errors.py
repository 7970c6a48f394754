"""How failures become HTTP answers: one handler per kind, registered by the app factory.

Every 4xx/5xx the API answers is an RFC 9457 problem (:class:`~initiator.schemas.ProblemDetails`,
``application/problem+json``), Starlette's and FastAPI's own (401, 404, 405, 422) included.
Its ``type`` is ``about:blank`` when the HTTP status says it all, else a
``urn:billing:problem:<kind>`` URI (see :data:`PROBLEM_TYPES`). A 503 always carries
``Retry-After``: storage or the warehouse unavailable, or every intake slot taken.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from azure.core.exceptions import AzureError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from initiator.body import BodyTimeoutError, BodyTooLargeError
from initiator.id_window import DuplicateTransactionIdsError
from initiator.idempotency import (
    DuplicateBodyError,
    IdempotencyConflictError,
    IdempotencyInProgressError,
)
from initiator.intake import BatchRejected
from initiator.intake.problems import Problem
from initiator.intake_slots import RETRY_AFTER_SECONDS, IntakesBusyError
from initiator.publishing import IntakeOutcomeUnknownError
from initiator.schemas import PROBLEM_MEDIA_TYPE, ProblemDetails
from initiator.uploads.intake import UploadMissingError
from initiator.uploads.ledger import UploadUnknownError, UploadUsedError
from shared.domain.pricebook_store import NoPricebookError

log = logging.getLogger(__name__)

#: Sent with an answer given before the body was read: the connection cannot carry another
#: request (the rest of the body would come first), so the client must open a new one.
CLOSE = {"Connection": "close"}
#: The ``Retry-After`` of a 503 for the warehouse being unavailable.
WAREHOUSE_RETRY_AFTER_SECONDS = 5


#: The kinds of problem this API names, beyond the plain HTTP statuses (``about:blank``).
PROBLEM_KINDS = (
    "batch-rejected",
    "batch-too-large",
    "batch-not-found",
    "body-timeout",
    "client-disconnected",
    "duplicate-body",
    "duplicate-transaction-ids",
    "idempotency-conflict",
    "idempotency-in-progress",
    "intakes-busy",
    "invalid-parameters",
    "no-pricebook",
    "outcome-unknown",
    "storage-unavailable",
    "upload-missing",
    "upload-unknown",
    "upload-used",
    "warehouse-unavailable",
)
PROBLEM_TYPES = {kind: f"urn:billing:problem:{kind}" for kind in PROBLEM_KINDS}


class ProblemResponse(JSONResponse):
    media_type = PROBLEM_MEDIA_TYPE


def problem(
    status: int,
    title: str,
    detail: str | None = None,
    *,
    kind: str | None = None,
    problems: list[Problem] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """A problem answer; ``kind`` is one of :data:`PROBLEM_KINDS` (None: ``about:blank``)."""
    body = ProblemDetails(
        type=PROBLEM_TYPES[kind] if kind else "about:blank",
        title=title,
        status=status,
        detail=detail,
        problems=problems or [],
    )
    return ProblemResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def too_large(limit: int) -> JSONResponse:
    reason = f"the request body exceeds the limit of {limit:,} bytes"
    return problem(
        413,
        "The batch file is too large",
        reason,
        kind="batch-too-large",
        problems=[Problem(line=None, field=None, reason=reason)],
    )


async def _rejected(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BatchRejected)
    body = exc.body()
    first = exc.problems[0].reason if exc.problems else None
    answer = ProblemDetails(
        type=PROBLEM_TYPES["batch-rejected"],
        title=body["title"],
        status=exc.status_code,
        detail=f"{len(exc.problems)} problem(s){'' if first is None else ', first: ' + first}",
        problems=exc.problems,
        problems_truncated=exc.problems_truncated,
    )
    return ProblemResponse(answer.model_dump(mode="json"), status_code=exc.status_code)


async def _body_too_large(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BodyTooLargeError)
    return too_large(exc.limit)


async def _idempotency_conflict(_request: Request, exc: Exception) -> JSONResponse:
    return problem(
        409, "Idempotency-Key reused for another request", str(exc), kind="idempotency-conflict"
    )


async def _duplicate_body(_request: Request, exc: Exception) -> JSONResponse:
    return problem(409, "Batch file already accepted", str(exc), kind="duplicate-body")


async def _duplicate_transaction_ids(_request: Request, exc: Exception) -> JSONResponse:
    return problem(
        409, "Transaction ids already accepted", str(exc), kind="duplicate-transaction-ids"
    )


async def _idempotency_in_progress(_request: Request, exc: Exception) -> JSONResponse:
    return problem(
        409,
        "Idempotency-Key in use",
        str(exc),
        kind="idempotency-in-progress",
        headers={"Retry-After": "1"},
    )


async def _upload_unknown(_request: Request, exc: Exception) -> JSONResponse:
    return problem(404, "No such upload", str(exc), kind="upload-unknown")


async def _upload_used(_request: Request, exc: Exception) -> JSONResponse:
    return problem(409, "Upload used already", str(exc), kind="upload-used")


async def _upload_missing(_request: Request, exc: Exception) -> JSONResponse:
    return problem(409, "Nothing uploaded yet", str(exc), kind="upload-missing")


async def _no_pricebook(_request: Request, exc: Exception) -> JSONResponse:
    return problem(503, "No pricebook installed", str(exc), kind="no-pricebook")


async def _storage_unavailable(request: Request, exc: Exception) -> JSONResponse:
    log.error("storage failure on %s %s", request.method, request.url.path, exc_info=exc)
    request.app.state.storage_outage.failed(exc)
    # True of an intake since the publisher settles every failure by reading the record
    # back (initiator.publishing.outcome); when it cannot, the answer is "outcome unknown".
    accepting = request.method == "POST" and request.url.path == "/batches"
    detail = "the batch was not accepted; retry later" if accepting else "retry later"
    return problem(
        503, "Storage unavailable", detail, kind="storage-unavailable", headers={"Retry-After": "5"}
    )


async def _outcome_unknown(_request: Request, exc: Exception) -> JSONResponse:
    """Never "not accepted" unless storage says so: the client is told how to find out."""
    assert isinstance(exc, IntakeOutcomeUnknownError)
    log.error("%s", exc)
    return problem(
        503,
        "Batch outcome unknown",
        str(exc),
        kind="outcome-unknown",
        headers={"Retry-After": "5", "X-Batch-Id": exc.batch_id},
    )


async def _warehouse_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """A locked or unreachable warehouse (``database is locked``, connection refused)."""
    log.error("warehouse failure on %s %s", request.method, request.url.path, exc_info=exc)
    return problem(
        503,
        "Warehouse unavailable",
        "the warehouse is busy or unreachable; retry later",
        kind="warehouse-unavailable",
        headers={"Retry-After": str(WAREHOUSE_RETRY_AFTER_SECONDS)},
    )


async def _intakes_busy(_request: Request, exc: Exception) -> JSONResponse:
    return problem(
        503,
        "Too many batches at once",
        str(exc),
        kind="intakes-busy",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS), **CLOSE},
    )


async def _body_timeout(request: Request, exc: Exception) -> JSONResponse:
    log.info("request body timed out on %s %s; nothing was kept", request.method, request.url)
    return problem(408, "The request body timed out", str(exc), kind="body-timeout", headers=CLOSE)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    """Starlette's and FastAPI's own errors (401, 404 of an unknown path, 405) as problems."""
    assert isinstance(exc, HTTPException)
    title = HTTPStatus(exc.status_code).phrase
    detail = exc.detail if exc.detail != title else None
    return problem(exc.status_code, title, detail, headers=dict(exc.headers or {}))


async def _client_disconnected(request: Request, _exc: Exception) -> JSONResponse:
    log.info("client disconnected during %s %s; nothing was kept", request.method, request.url)
    return problem(
        400,
        "Client disconnected",
        "the body ended before it was complete",
        kind="client-disconnected",
    )


async def _invalid_request(_request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's parameter validation (e.g. ``?priority=urgent``) in the same problem shape."""
    assert isinstance(exc, RequestValidationError)
    problems = [
        Problem(line=None, field=".".join(str(part) for part in error["loc"]), reason=error["msg"])
        for error in exc.errors()
    ]
    return problem(
        422,
        "Invalid request parameters",
        problems[0].reason if problems else None,
        kind="invalid-parameters",
        problems=problems,
    )


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(BatchRejected, _rejected)
    app.add_exception_handler(BodyTooLargeError, _body_too_large)
    app.add_exception_handler(IdempotencyConflictError, _idempotency_conflict)
    app.add_exception_handler(DuplicateBodyError, _duplicate_body)
    app.add_exception_handler(DuplicateTransactionIdsError, _duplicate_transaction_ids)
    app.add_exception_handler(IdempotencyInProgressError, _idempotency_in_progress)
    app.add_exception_handler(NoPricebookError, _no_pricebook)
    app.add_exception_handler(UploadUnknownError, _upload_unknown)
    app.add_exception_handler(UploadUsedError, _upload_used)
    app.add_exception_handler(UploadMissingError, _upload_missing)
    app.add_exception_handler(IntakeOutcomeUnknownError, _outcome_unknown)
    app.add_exception_handler(AzureError, _storage_unavailable)
    app.add_exception_handler(ClientDisconnect, _client_disconnected)
    app.add_exception_handler(BodyTimeoutError, _body_timeout)
    app.add_exception_handler(IntakesBusyError, _intakes_busy)
    app.add_exception_handler(OperationalError, _warehouse_unavailable)
    app.add_exception_handler(HTTPException, _http_error)
