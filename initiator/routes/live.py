"""``GET /dashboard/live``: the live figures and the history behind the dashboard's charts.

Polled every second by the page and by ``billing top``. A poll never reads storage itself:
it keeps the one sampler going (:mod:`initiator.observability.sampler`) and answers from its
latest reading and its ring. ``after`` is the ``seq`` of the last sample the caller has: 0
(the default) for the whole window, then only what is new. A plain ``def``: the first poll
after an unwatched spell waits for the sampler's first reading, in a worker thread.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status

from initiator.auth import require_api_key
from initiator.observability.live import LiveView, QueueInfo, live_view
from initiator.observability.sampler import Sampler

router = APIRouter(tags=["dashboard"], dependencies=[Depends(require_api_key)])


@router.get(
    "/dashboard/live",
    operation_id="getDashboardLive",
    summary="The dashboard's live figures",
    response_model=LiveView,
    responses={503: {"description": "no reading yet: storage did not answer the sampler"}},
)
def dashboard_live(
    request: Request,
    after: int = Query(0, ge=0, description="the seq of the last sample the caller has"),
) -> LiveView:
    """The latest reading (batches, processors, queue depths, rates) and the samples after
    ``after``: what the dashboard's charts and ``billing top`` draw. Polling keeps the one
    sampler going; nobody polling, it makes no storage request."""
    sampler: Sampler = request.app.state.sampler
    queues: list[QueueInfo] = request.app.state.sampled_queues
    reading = sampler.watched()
    if reading is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, detail="no reading yet; the sampler keeps trying"
        )
    return live_view(
        reading,
        sampler.ring.after(after),
        queues,
        now=datetime.now(UTC),
        sample_seconds=sampler.interval,
        window_seconds=sampler.window_seconds,
    )
