"""Faults for the Azure storage SDKs, injected at the very bottom of their pipeline.

An azure-core ``RequestsTransport`` sends each request through a ``requests`` session; we
hand it a session whose HTTP adapter consults the fault plan first. Everything above the
adapter is the SDK as shipped: azure-core's mapping of ``requests`` errors, its response
types, the SDK's retry policy (which draws again on each attempt) and its error parsing.
So a test under faults sees exactly what the SDK would make of a bad network or a busy
service. (A policy would not do: the blob and queue clients ignore ``per_retry_policies``,
and one placed before the retry policy would fail whole operations, not attempts.)

What the adapter does with each fault (and what the SDK's retry makes of it, see
:mod:`shared.storage.retries`):

* **status**: answers 500 ``InternalError``, 503 ``ServerBusy`` or 429 without sending
  anything. Blob and queue services throttle with 503, never 429, so there a drawn 429 is
  answered as 503 ``ServerBusy``; the table service's 429 carries ``x-ms-retry-after-ms``
  as Cosmos DB's does (azure-core then retries it on idempotent methods only).
* **timeout**: raises ``requests.ConnectTimeout`` without sending: azure-core turns it into
  ``ServiceRequestTimeoutError`` (the request never reached the server).
* **lost response**: sends the request (the server applies it), reads and drops the
  answer, then raises ``requests.ReadTimeout``: azure-core turns it into
  ``ServiceResponseTimeoutError``. The storage policy retries it for every method; the
  table policy does not retry POST (insert, create table) or PATCH (merge update).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import requests
from azure.core.pipeline.transport import RequestsTransport
from requests.adapters import HTTPAdapter
from urllib3 import HTTPResponse
from urllib3.util.retry import Retry

from shared.faults.plan import Fault, FaultKind, FaultPlan

#: The storage SDKs' own transport time-outs (the table SDK keeps azure-core's defaults).
STORAGE_CONNECTION_TIMEOUT = 20
STORAGE_READ_TIMEOUT = 60
#: How long a synthesized table 429 asks the client to wait.
THROTTLE_RETRY_AFTER_MS = 50

_ERROR_CODES = {500: "InternalError", 503: "ServerBusy", 429: "TooManyRequests"}
_REASONS = {500: "Internal Server Error", 503: "Service Unavailable", 429: "Too Many Requests"}


def faulty_transport(plan: FaultPlan, service: str) -> RequestsTransport:
    """A transport for one service client (``blob``, ``queue`` or ``table``) under ``plan``."""
    session = requests.Session()
    adapter = FaultyAdapter(plan, service)
    for prefix in ("http://", "https://"):
        session.mount(prefix, adapter)
    timeouts: dict[str, Any] = {}
    if service != "table":
        timeouts = {"connection_timeout": STORAGE_CONNECTION_TIMEOUT}
        timeouts["read_timeout"] = STORAGE_READ_TIMEOUT
    return RequestsTransport(session=session, session_owner=True, **timeouts)


class FaultyAdapter(HTTPAdapter):
    """A ``requests`` adapter that fails, times out or loses requests as the plan draws."""

    def __init__(self, plan: FaultPlan, service: str) -> None:
        # no retries down here, as azure-core's own adapter: the SDK's policy retries
        super().__init__(max_retries=Retry(total=False, redirect=False, raise_on_status=False))
        self._plan = plan
        self._service = service

    def send(  # type: ignore[override]  # requests' signature is untyped
        self, request: requests.PreparedRequest, **kwargs: Any
    ) -> requests.Response:
        fault = self._plan.draw()
        if fault is None:
            return super().send(request, **kwargs)
        if fault.kind is FaultKind.TIMEOUT:
            raise requests.ConnectTimeout(f"injected fault: {request.method} timed out")
        if fault.kind is FaultKind.LOST_RESPONSE:
            response = super().send(request, **kwargs)
            _ = response.content  # the server applied it and answered; the answer is lost
            response.close()
            raise requests.ReadTimeout(f"injected fault: the response to {request.method} was lost")
        return self._error_response(request, fault)

    def _error_response(self, request: requests.PreparedRequest, fault: Fault) -> requests.Response:
        status = fault.status
        if status == 429 and self._service != "table":
            status = 503
        code = _ERROR_CODES[status]
        message = f"injected fault: {status} {code}"
        headers: dict[str, str] = {"x-ms-error-code": code}
        if self._service == "table":
            body = json.dumps(
                {"odata.error": {"code": code, "message": {"lang": "en-US", "value": message}}}
            ).encode()
            headers["Content-Type"] = "application/json;odata=minimalmetadata"
            if status == 429:
                headers["x-ms-retry-after-ms"] = str(THROTTLE_RETRY_AFTER_MS)
        else:
            body = (
                '<?xml version="1.0" encoding="utf-8"?>'
                f"<Error><Code>{code}</Code><Message>{message}</Message></Error>"
            ).encode()
            headers["Content-Type"] = "application/xml"
        return self.build_response(request, _raw_response(status, headers, body))


def _raw_response(status: int, headers: Mapping[str, str], body: bytes) -> HTTPResponse:
    return HTTPResponse(
        body=io.BytesIO(body),
        headers={**headers, "Content-Length": str(len(body))},
        status=status,
        reason=_REASONS[status],
        preload_content=False,
        decode_content=False,
    )
