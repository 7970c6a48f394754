"""The client options every storage client shares: a short retry back-off and the meter.

Two things the SDKs do not do for us out of the box:

* Their default retry waits 15 s (± 3 s of jitter) before the first retry: a hiccup would
  freeze a demo or a test for a quarter of a minute. We wait a short, configurable, fixed
  back-off instead (``storage_retry_backoff_seconds``), with half of it as jitter.
* The meter must see every HTTP request, retries included. The blob and queue clients build
  their own pipeline and silently ignore azure-core's ``per_retry_policies`` keyword, so the
  meter rides on ``raw_request_hook``, which all three SDKs call from a policy placed after
  the retry policy: once per attempt.

What these policies then retry by themselves, and which operations that leaves safe to
repeat blindly and which need a read-back (a lost response to a conditional or create-only
write), is :mod:`shared.storage.retries`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from azure.core.pipeline.policies import RetryMode
from azure.storage import blob, queue

from shared.meter import MeterPolicy
from shared.settings import Settings


@dataclass(frozen=True)
class RetryOptions:
    """How many times to retry a failed request, and how long to wait between tries."""

    total: int = 5
    backoff_seconds: float = 0.4

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryOptions:
        return cls(
            total=settings.storage_retry_total,
            backoff_seconds=settings.storage_retry_backoff_seconds,
        )


def queue_client_options(retry: RetryOptions) -> dict[str, Any]:
    """Keyword arguments for a queue service client."""
    return _storage_client_options("queue", queue.LinearRetry, retry)


def blob_client_options(retry: RetryOptions) -> dict[str, Any]:
    """Keyword arguments for a blob service client."""
    return _storage_client_options("blob", blob.LinearRetry, retry)


def _storage_client_options(
    service: str,
    policy_class: type[queue.LinearRetry] | type[blob.LinearRetry],
    retry: RetryOptions,
) -> dict[str, Any]:
    """``LinearRetry`` is the storage SDKs' own policy: it knows which failures are worth a
    retry (timeouts, 5xx but 501/505, connection errors) and which are not (4xx)."""
    policy = policy_class(
        # The SDK annotates these seconds as int but computes with floats.
        backoff=retry.backoff_seconds,  # type: ignore[arg-type]
        retry_total=retry.total,
        random_jitter_range=retry.backoff_seconds / 2,  # type: ignore[arg-type]
    )
    return {"retry_policy": policy, "raw_request_hook": MeterPolicy(service).on_request}


def table_client_options(retry: RetryOptions) -> dict[str, Any]:
    """Keyword arguments for a table service client (azure-core's retry policy underneath)."""
    return {
        "retry_total": retry.total,
        "retry_mode": RetryMode.Fixed,
        "retry_backoff_factor": retry.backoff_seconds,
        "raw_request_hook": MeterPolicy("table").on_request,
    }
