"""How the initiator is served: uvicorn with every wait bounded and no access log.

Both ``billing initiator`` and ``billing serve --all-in-one`` build their server here, so
the limits hold wherever the API runs:

* a request's headers must arrive within ``BILLING_REQUEST_HEADER_TIMEOUT_SECONDS``
  (:mod:`initiator.header_timeout`); the body's pace is the route's business
  (:mod:`initiator.body_pace`);
* no access log: uvicorn's would write every query string to the log (an API key someone
  put in ``?api_key=`` with it); ``billing_http_requests`` on ``/metrics`` counts requests;
* uvicorn's own logging left unconfigured (``log_config=None``): its records go to the
  root logger the role set up (:func:`shared.telemetry.configure_logging`), in the
  project's format, instead of a second ``INFO:     …`` format interleaved with it.
"""

from __future__ import annotations

from typing import Any

import uvicorn
from fastapi import FastAPI

from initiator.header_timeout import with_header_timeout
from shared.settings import Settings


def server_config(
    app: FastAPI, settings: Settings, *, host: str, port: int, **options: Any
) -> uvicorn.Config:
    """The uvicorn configuration of the initiator; ``options`` add to or override it."""
    values: dict[str, Any] = {
        "host": host,
        "port": port,
        "http": with_header_timeout(settings.request_header_timeout_seconds),
        "access_log": False,
        "log_config": None,
        "log_level": "info",
        **options,
    }
    return uvicorn.Config(app, **values)
