"""``GET /healthz`` and ``GET /readyz``: the routes without authentication, for probes.

* ``/healthz`` (liveness): 200 unless only a restart can help, which is when the process has
  nearly run out of file descriptors (it could no longer accept a connection or open a
  file).
* ``/readyz`` (readiness): 200 while the initiator can take batches; 503 with the reason
  when it has few descriptors to spare or storage has failed every request for longer than
  its retries take (:class:`~shared.outage.OutageClock`): a platform stops routing uploads
  to it without restarting it.

Coroutines on purpose: they run on the event loop itself, so they answer even while every
worker thread is busy (a probe that waits behind a queue of uploads would restart a healthy
instance). Neither makes a storage request: an idle deployment stays quiet.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from shared.descriptors import LIVE_SHARE, READY_SHARE, descriptor_shortage
from shared.outage import OutageClock

router = APIRouter(tags=["health"])


def _answer(reason: str | None) -> JSONResponse:
    if reason is None:
        return JSONResponse({"status": "ok"})
    return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)


@router.get("/healthz", operation_id="getHealth", summary="Liveness probe")
async def healthz() -> JSONResponse:
    """Liveness: ``{"status": "ok"}``, or 503 with the reason when only a restart can help
    (the process is nearly out of file descriptors). No API key needed."""
    return _answer(descriptor_shortage(LIVE_SHARE))


@router.get("/readyz", operation_id="getReadiness", summary="Readiness probe")
async def readyz(request: Request) -> JSONResponse:
    """Readiness: ``{"status": "ok"}`` while the initiator can take batches, or 503 with the
    reason (few descriptors to spare, storage failing for longer than its retries take).
    No API key needed."""
    storage: OutageClock | None = getattr(request.app.state, "storage_outage", None)
    reason = descriptor_shortage(READY_SHARE) or (storage.outage() if storage else None)
    return _answer(reason)
