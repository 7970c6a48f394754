"""Start-up steps that outlast a transient storage failure.

The SDKs retry a failed request a few times (at most three times per kind of failure, and
the table SDK never retries a POST after a timeout or a lost response), then raise. While
a role runs, its loops back off and try again; a role that is *starting* has no loop yet,
so one throttled request (503 ``ServerBusy``) would stop the whole process. Each start-up
step (creating resources, installing the sample pricebook, reading the gate) is idempotent,
so it is simply tried again a few times, a little longer apart each time.

Only transient failures are tried again: a timeout, a lost response, or a status the
service answers when busy or failing. Anything else (403, 404, 409, ...) says something
true about the account and is raised at once.

Not the same job as ``billing/startup.py``, which waits up to minutes, before a role is
built, for its dependencies to answer at all: this retries one step of a role that has
already reached them, a few times and briefly. Both are tenacity underneath.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from azure.core.exceptions import AzureError, HttpResponseError
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_incrementing,
)

T = TypeVar("T")

#: How often a start-up step is tried in all (each try with the SDK's own retries inside).
START_ATTEMPTS = 4
#: Statuses a storage service answers when it is busy, throttling or failing for a while.
TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

log = logging.getLogger(__name__)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` may go away by itself (then trying again is worth it)."""
    if not isinstance(error, AzureError):
        return False
    if isinstance(error, HttpResponseError):  # an answer: 404, 409, 412 ... say what is true
        return error.status_code in TRANSIENT_STATUSES
    return True  # no answer: a connection error, a timeout or a lost response


def retry_transient(
    action: Callable[[], T],
    *,
    what: str,
    pause: float,
    attempts: int = START_ATTEMPTS,
) -> T:
    """``action()``, tried again after a transient storage failure, up to ``attempts`` times
    in all, ``pause`` seconds times the attempt number apart. ``action`` must be idempotent."""

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning("%s failed (attempt %d, %s); trying again", what, state.attempt_number, error)

    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(attempts),
        wait=wait_incrementing(start=pause, increment=pause),
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(action)
