"""Observability set up in one place for every role: logs, Azure Monitor, the meter export."""

from __future__ import annotations

import logging
import os

from shared import meter

NOISY_LOGGERS = ("azure", "uamqp", "urllib3", "httpx", "uvicorn.access")


def configure_logging(level: str = "INFO") -> None:
    """Readable logs on stderr; Azure Monitor too when its connection string is set.

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
    if os.environ.get("APPLICATIONINSIGHTS_CONNECTION_STRING"):
        try:
            from azure.monitor.opentelemetry import configure_azure_monitor
        except ImportError:
            logging.getLogger(__name__).warning(
                "APPLICATIONINSIGHTS_CONNECTION_STRING is set but azure-monitor-opentelemetry "
                "is not installed: pip install 'billing-mapreduce[azure-monitor]'"
            )
        else:
            configure_azure_monitor()
