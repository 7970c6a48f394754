"""``GET /metrics``: Prometheus text exposition, behind the API key like the other routes.

Prometheus sends the key with ``authorization: {type: Bearer, credentials: …}`` in its
scrape config. The handler is a plain ``def`` so FastAPI runs it in a worker thread: a
scrape whose cache has expired reads storage.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from initiator.auth import require_api_key
from initiator.observability.registry import EXPOSITION_CONTENT_TYPE, ApiMetrics

router = APIRouter(tags=["observability"], dependencies=[Depends(require_api_key)])


@router.get(
    "/metrics",
    operation_id="getMetrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {EXPOSITION_CONTENT_TYPE: {}}, "description": "Metrics"}},
)
def metrics(request: Request) -> Response:
    """The initiator's metrics in the Prometheus text format: HTTP requests by route and
    status, storage requests by kind, batches by status, and the live processors' figures."""
    api_metrics: ApiMetrics = request.app.state.metrics
    return Response(api_metrics.exposition(), media_type=EXPOSITION_CONTENT_TYPE)
