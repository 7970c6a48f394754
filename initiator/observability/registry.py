"""The initiator's Prometheus registry: its own, not the library's global one.

One registry per app, so that two apps in one process (tests, all-in-one mode) each export
their own HTTP counters without clashing. The process collector adds the standard
``process_*`` figures (CPU seconds, resident memory, open file descriptors).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest

from initiator.observability.collector import BillingCollector
from initiator.observability.http_metrics import HttpMetrics
from initiator.observability.readings import Readings

#: The classic Prometheus text exposition format (what every scraper accepts).
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class ApiMetrics:
    registry: CollectorRegistry
    http: HttpMetrics

    @classmethod
    def create(cls, readings: Callable[[], Readings | None]) -> ApiMetrics:
        """``readings`` returns the app's cached readings, or None before start-up."""
        registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        registry.register(BillingCollector(readings))
        return cls(registry=registry, http=HttpMetrics.register(registry))

    def exposition(self) -> bytes:
        """Every metric in the text format (blocking: may read storage through the cache)."""
        return generate_latest(self.registry)
