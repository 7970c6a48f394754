"""``GET /healthz``: the one route without authentication, for probes and load balancers.

A coroutine on purpose: it runs on the event loop itself, so it answers even while every
worker thread is busy (a probe that waits behind a queue of uploads would restart a
healthy instance).
"""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="getHealth", summary="Health check")
async def healthz() -> dict[str, str]:
    """Answers ``{"status": "ok"}`` while the process serves; no API key needed."""
    return {"status": "ok"}
