"""Observability set up in one place for every role: logs, the export of spans, metrics and
logs, the meter export."""

from __future__ import annotations

import logging
import os

from shared import meter, otel_metrics
from shared.log_throttle import RepeatThrottle
from shared.telemetry_export import configure_export

NOISY_LOGGERS = ("azure", "uamqp", "urllib3", "httpx", "uvicorn.access")

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(processName)s %(name)s: %(message)s"
#: When spans are exported, each line names the span it was written in (``0`` outside one),
#: so a line in the container's log leads to its trace.
TRACED_LOG_FORMAT = (
    "%(asctime)s %(levelname)-7s %(processName)s %(name)s "
    "[trace=%(otelTraceID)s span=%(otelSpanID)s]: %(message)s"
)
#: For records made before the logging instrumentation was on (and by other record factories).
NO_SPAN = {"otelTraceID": "0", "otelSpanID": "0"}

STDERR_HANDLER = "billing-stderr"


def log_formatter(*, traced: bool) -> logging.Formatter:
    if traced:
        return logging.Formatter(TRACED_LOG_FORMAT, defaults=NO_SPAN)
    return logging.Formatter(LOG_FORMAT)


def configure_logging(level: str = "INFO") -> None:
    """Readable logs on stderr; spans, metrics and logs exported where the environment says
    (:mod:`shared.telemetry_export`), the storage-request meter among the metrics
    (:mod:`shared.otel_metrics`).

    The Azure SDKs log every HTTP request at INFO, which would bury ours: turn them down.
    Also arranges for the storage-request meter to be exported at exit when asked to
    (``BILLING_METER_EXPORT_DIR``; ``billing demo`` sums what its processes used).
    """
    meter.export_at_exit()
    root = logging.getLogger()
    root.setLevel(os.environ.get("BILLING_LOG_LEVEL", level).upper())
    export = configure_export()
    # Not basicConfig: the exporters' handlers may already be on the root logger.
    if not any(handler.name == STDERR_HANDLER for handler in root.handlers):
        handler = logging.StreamHandler()
        handler.set_name(STDERR_HANDLER)
        handler.setFormatter(log_formatter(traced=export != "none"))
        handler.addFilter(RepeatThrottle())  # an error in a tight loop must not fill the disk
        root.addHandler(handler)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    otel_metrics.create_instruments()
