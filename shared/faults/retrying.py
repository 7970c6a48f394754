"""One port call under a fault plan, retried the way the Azure SDK would retry it.

The embedded backend has no HTTP pipeline, so its fault twin acts out at the port what the
SDK does below it (:mod:`shared.storage.retries`): each attempt draws a fault; an error
status or a time-out does not apply the call; a lost response applies it, then fails; the
SDK's policy for that operation decides whether another attempt follows, within the same
budget (``storage_retry_total`` in all, at most three of each kind) and after the same
back-off. What the caller finally sees, a result or an exception, is what it would see
from the Azure backend under the same faults.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from azure.core.exceptions import (
    AzureError,
    HttpResponseError,
    ServiceRequestTimeoutError,
    ServiceResponseTimeoutError,
)

from shared.faults.plan import Fault, FaultKind, FaultPlan
from shared.faults.transport import THROTTLE_RETRY_AFTER_MS
from shared.storage.retries import OPERATIONS, RETRIES_PER_KIND, Operation

T = TypeVar("T")

_ERROR_CODES = {500: "InternalError", 503: "ServerBusy", 429: "TooManyRequests"}


@dataclass
class _Budget:
    """The SDK's retry counters: a retry is allowed while none of them went below zero."""

    total: int
    left: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("connect", "read", "status"), RETRIES_PER_KIND)
    )

    def spend(self, kind: str) -> bool:
        self.total -= 1
        self.left[kind] -= 1
        return self.total >= 0 and self.left[kind] >= 0


class RetryingInjector:
    """Runs port calls under ``plan`` with the SDK's retries (``retry_total``, ``backoff``)."""

    def __init__(
        self,
        plan: FaultPlan,
        *,
        retry_total: int,
        backoff_seconds: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._plan = plan
        self._retry_total = retry_total
        self._backoff_seconds = backoff_seconds
        self._sleep = sleep

    def call(self, operation_name: str, action: Callable[[], T]) -> T:
        operation = OPERATIONS[operation_name]
        budget = _Budget(self._retry_total)
        while True:
            fault = self._plan.draw()
            if fault is None:
                return action()
            error, retried, pause = self._act_out(fault, operation, action, budget)
            if not retried:
                raise error
            self._sleep(pause)

    def _act_out(
        self, fault: Fault, operation: Operation, action: Callable[[], object], budget: _Budget
    ) -> tuple[AzureError, bool, float]:
        """The error this attempt ends with, whether the SDK tries again, and after how long."""
        name = f"{operation.service} {operation.method}"
        if fault.kind is FaultKind.TIMEOUT:
            error: AzureError = ServiceRequestTimeoutError(f"injected fault: {name} timed out")
            return (
                error,
                operation.retries_after_transport_error() and budget.spend("connect"),
                (self._backoff_seconds),
            )
        if fault.kind is FaultKind.LOST_RESPONSE:
            with contextlib.suppress(Exception):  # lost with the response, good or bad
                action()  # applied by the server
            error = ServiceResponseTimeoutError(f"injected fault: the response to {name} was lost")
            return (
                error,
                operation.retries_after_transport_error() and budget.spend("read"),
                (self._backoff_seconds),
            )
        status = fault.status if fault.status != 429 or operation.service == "table" else 503
        error = status_error(status, name)
        pause = THROTTLE_RETRY_AFTER_MS / 1000 if status == 429 else self._backoff_seconds
        return error, operation.retries_status(status) and budget.spend("status"), pause


def status_error(status: int, what: str) -> HttpResponseError:
    """The ``HttpResponseError`` the SDK raises for an error status it did not retry."""
    code = _ERROR_CODES[status]
    error = HttpResponseError(message=f"injected fault: {what} answered {status} {code}")
    error.status_code = status
    error.reason = code
    error.error_code = code  # type: ignore[attr-defined]  # the storage SDKs set it too
    return error
