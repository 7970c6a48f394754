"""How failures become HTTP answers: one handler per kind, registered by the app factory.

Every 4xx/5xx the intake raises is a JSON problem body (:class:`~initiator.schemas.ProblemDetails`).
"""

from __future__ import annotations

import logging

from azure.core.exceptions import AzureError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from initiator.body import BodyTooLargeError
from initiator.idempotency import IdempotencyConflictError, IdempotencyInProgressError
from initiator.intake import BatchRejected
from initiator.intake.problems import Problem
from initiator.publishing import IntakeOutcomeUnknownError
from initiator.schemas import ProblemDetails
from shared.domain.pricebook_store import NoPricebookError

log = logging.getLogger(__name__)


def problem(
    status: int,
    title: str,
    detail: str | None = None,
    *,
    problems: list[Problem] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = ProblemDetails(title=title, status=status, detail=detail, problems=problems or [])
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


def too_large(limit: int) -> JSONResponse:
    reason = f"the request body exceeds the limit of {limit:,} bytes"
    return problem(
        413,
        "The batch file is too large",
        reason,
        problems=[Problem(line=None, field=None, reason=reason)],
    )


async def _rejected(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BatchRejected)
    return JSONResponse(exc.body(), status_code=exc.status_code)


async def _body_too_large(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BodyTooLargeError)
    return too_large(exc.limit)


async def _idempotency_conflict(_request: Request, exc: Exception) -> JSONResponse:
    return problem(409, "Idempotency-Key reused with a different body", str(exc))


async def _idempotency_in_progress(_request: Request, exc: Exception) -> JSONResponse:
    return problem(409, "Idempotency-Key in use", str(exc), headers={"Retry-After": "1"})


async def _no_pricebook(_request: Request, exc: Exception) -> JSONResponse:
    return problem(503, "No pricebook installed", str(exc))


async def _storage_unavailable(request: Request, exc: Exception) -> JSONResponse:
    log.error("storage failure on %s %s", request.method, request.url.path, exc_info=exc)
    # True of an intake since the publisher settles every failure by reading the record
    # back (initiator.publishing.outcome); when it cannot, the answer is "outcome unknown".
    accepting = request.method == "POST" and request.url.path == "/batches"
    detail = "the batch was not accepted; retry later" if accepting else "retry later"
    return problem(503, "Storage unavailable", detail, headers={"Retry-After": "5"})


async def _outcome_unknown(_request: Request, exc: Exception) -> JSONResponse:
    """Never "not accepted" unless storage says so: the client is told how to find out."""
    assert isinstance(exc, IntakeOutcomeUnknownError)
    log.error("%s", exc)
    return problem(
        503,
        "Batch outcome unknown",
        str(exc),
        headers={"Retry-After": "5", "X-Batch-Id": exc.batch_id},
    )


async def _client_disconnected(request: Request, _exc: Exception) -> JSONResponse:
    log.info("client disconnected during %s %s; nothing was kept", request.method, request.url)
    return problem(400, "Client disconnected", "the body ended before it was complete")


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
        problems=problems,
    )


def register_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(BatchRejected, _rejected)
    app.add_exception_handler(BodyTooLargeError, _body_too_large)
    app.add_exception_handler(IdempotencyConflictError, _idempotency_conflict)
    app.add_exception_handler(IdempotencyInProgressError, _idempotency_in_progress)
    app.add_exception_handler(NoPricebookError, _no_pricebook)
    app.add_exception_handler(IntakeOutcomeUnknownError, _outcome_unknown)
    app.add_exception_handler(AzureError, _storage_unavailable)
    app.add_exception_handler(ClientDisconnect, _client_disconnected)
