"""The check of ``POST /batches?callback=``: a URL the service may send the outcome to.

A callback is a request the controller makes on the sender's behalf, so it must not reach
the deployment's own network (:mod:`shared.events.callback_urls`). It is checked before
the body is read: a refused one costs the sender no upload.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse

from initiator.errors import problem
from shared.events.callback_urls import CallbackRefusedError, check_callback
from shared.settings import Settings


def refuse_callback(url: str, settings: Settings) -> JSONResponse | None:
    """A 422 saying why ``url`` is refused, or None if it is allowed (resolves the host)."""
    try:
        check_callback(url, settings.callback_allowed_networks)
    except CallbackRefusedError as refused:
        return problem(422, "The callback URL is not allowed", str(refused))
    return None
