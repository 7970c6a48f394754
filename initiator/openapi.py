"""The OpenAPI document as the API really answers, and the batch file's request body.

FastAPI's generated document misses four things this API does: every route behind the API
key can answer ``401`` (and ``503`` when storage is down); parameter validation answers
``422`` in our problem shape, not FastAPI's ``HTTPValidationError``; every error is
``application/problem+json`` (RFC 9457), not ``application/json``; and ``POST /batches``
reads a raw body (CSV, JSON Lines, gzip) that no pydantic model describes.
:func:`api_document` fixes the first three for every route, present and future (a route is
behind the key when its operation has a security requirement); :data:`BATCH_FILE_BODY` is
the fourth, declared on the route.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from initiator.schemas import PROBLEM_MEDIA_TYPE, ProblemDetails, UploadReference

PROBLEM_REF = f"#/components/schemas/{ProblemDetails.__name__}"
_PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": PROBLEM_REF}}}
_TEXT = {"type": "string"}
_BINARY = {"type": "string", "format": "binary"}

#: ``POST /batches``'s body: the batch file itself, in one of the media types it is read as.
BATCH_FILE_BODY: dict[str, Any] = {
    "required": True,
    "description": (
        "The batch file: CSV with a header row, or JSON Lines with the same field names "
        "(transaction_id, customer_id, sku, quantity, region, occurred_at); UTF-8. Gzip it "
        "with Content-Encoding: gzip, or send the gzip file as application/gzip. Or, as "
        'application/json, {"upload": blob}: the file uploaded to a POST /uploads grant.'
    ),
    "content": {
        "text/csv": {"schema": _TEXT},
        "application/x-ndjson": {"schema": _TEXT},
        "application/jsonl": {"schema": _TEXT},
        "application/gzip": {"schema": _BINARY},
        "application/octet-stream": {"schema": _BINARY},
        # Not a batch file: a reference to one uploaded first (POST /uploads).
        "application/json": {"schema": UploadReference.model_json_schema()},
    },
}

_UNAUTHORIZED = {
    "description": "No valid API key: send 'Authorization: Bearer <key>'",
    "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
    "content": _PROBLEM_CONTENT,
}
_INVALID = {"description": "Invalid request parameters", "content": _PROBLEM_CONTENT}
_UNAVAILABLE = {
    "description": "Storage or the warehouse is unavailable, or the service is busy",
    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
    "content": _PROBLEM_CONTENT,
}
#: FastAPI's own validation models: unused once every 422 is a problem.
_FASTAPI_VALIDATION_MODELS = ("HTTPValidationError", "ValidationError")


def api_document(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI document, built once and kept (as FastAPI keeps its own)."""
    if app.openapi_schema is None:
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
            webhooks=app.webhooks.routes,
        )
        _describe_errors(document)
        app.openapi_schema = document
    return app.openapi_schema


def _describe_errors(document: dict[str, Any]) -> None:
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if operation.get("security"):  # behind the key: reads storage too
                responses.setdefault("401", _UNAUTHORIZED)
                responses.setdefault("503", _UNAVAILABLE)
            if "422" in responses:
                responses["422"] = _INVALID
            for code, response in responses.items():
                if code[0] in "45":  # every error answer is a problem
                    response["content"] = _PROBLEM_CONTENT
    for operations in document.get("webhooks", {}).values():
        for operation in operations.values():  # what a receiver answers: 2xx or a retry
            operation.get("responses", {}).pop("422", None)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name in _FASTAPI_VALIDATION_MODELS:
        schemas.pop(name, None)
