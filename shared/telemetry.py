"""Observability set up in one place for every role: logs, trace export, the meter export."""

from __future__ import annotations

import logging
import os

from shared import meter
from shared.trace_export import configure_trace_export

NOISY_LOGGERS = ("azure", "uamqp", "urllib3", "httpx", "uvicorn.access")


def configure_logging(level: str = "INFO") -> None:
    """Readable logs on stderr; spans (and with Azure Monitor, logs) exported where the
    environment says (:mod:`shared.trace_export`).

    The Azure SDKs log every HTTP request at INFO, which would bury ours: turn them down.
    Also arranges for the storage-request meter to be exported at exit when asked to
    (``BILLING_METER_EXPORT_DIR``; ``billing demo`` sums what its processes used).
    """
    meter.export_at_exit()
    level = os.environ.get("BILLING_LOG_LEVEL", level).upper()
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)-7s %(processName)s %(name)s: %(message)s",
    )
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    configure_trace_export()
