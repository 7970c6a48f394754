"""The listener's knobs from the ``BILLING_*`` settings (the engine itself never reads them).

The one place where the settings' millisecond back-off steps become the listener's seconds.
"""

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
        "backoff_min_idle": _seconds(settings.backoff_min_idle_ms),
        "backoff_delta": _seconds(settings.backoff_delta_ms),
        "backoff_max_idle": _seconds(settings.backoff_max_idle_ms),
        "safety_poll_seconds": settings.safety_poll_seconds,
        "scaling_rule": settings.scaling_rule,
        "max_threads": settings.max_dequeue_threads,
        "wedged_handler_seconds": settings.wedged_handler_seconds,
    }
    values.update(overrides)
    return ListenerConfig(**values)


def controller_backoff(settings: Settings) -> dict[str, float]:
    """The controller's own back-off (``BILLING_CONTROLLER_*_MS``) as listener overrides."""
    return {
        "backoff_min_idle": _seconds(settings.controller_backoff_min_idle_ms),
        "backoff_delta": _seconds(settings.controller_backoff_delta_ms),
        "wake_hold": _seconds(settings.controller_wake_hold_ms),
    }


def _seconds(milliseconds: int) -> float:
    return milliseconds / 1000
