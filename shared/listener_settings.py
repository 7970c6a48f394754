"""The listener's knobs from the ``BILLING_*`` settings (the engine itself never reads them)."""

from __future__ import annotations

from typing import Any

from shared.listener.config import ListenerConfig
from shared.settings import Settings


def listener_config(settings: Settings, **overrides: Any) -> ListenerConfig:
    """The listener settings of ``settings`` (``BILLING_*``), with ``overrides`` on top."""
    values: dict[str, Any] = {
        "batch_size": settings.dequeue_batch_size,
        "visibility_timeout": settings.visibility_timeout_seconds,
        "max_dequeue_count": settings.max_dequeue_count,
        "backoff_min_idle": settings.backoff_min_idle_ms / 1000,
        "backoff_delta": settings.backoff_delta_ms / 1000,
        "backoff_max_idle": settings.backoff_max_idle_ms / 1000,
        "safety_poll_seconds": settings.safety_poll_seconds,
        "scaling_rule": settings.scaling_rule,
        "max_threads": settings.max_dequeue_threads,
    }
    values.update(overrides)
    return ListenerConfig(**values)
