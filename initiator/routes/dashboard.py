"""The dashboard: a public page shell at ``/`` and its data at ``GET /dashboard/data``.

A browser cannot put an ``Authorization`` header on a page load, so the page itself holds
no data and is served without a key: its script asks for the API key once (kept in
``sessionStorage``, gone with the tab) and sends it as a Bearer header on every fetch of
``/dashboard/data``, which is authenticated like the rest of the API.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from importlib.resources import files

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from initiator.auth import require_api_key
from initiator.observability.fleet import ProcessorInstance
from initiator.observability.readings import Readings
from initiator.schemas import BatchStatusView
from shared.contracts.batch_status import BatchStatus

page_router = APIRouter(tags=["dashboard"])
data_router = APIRouter(tags=["dashboard"], dependencies=[Depends(require_api_key)])


class DashboardData(BaseModel):
    """What the dashboard shows, refreshed every two seconds (cached server-side as long)."""

    generated_at: datetime
    batch_counts: dict[BatchStatus, int] = Field(description="batch records in each status")
    batches: list[BatchStatusView] = Field(description="the most recent batches, newest first")
    processors: list[ProcessorInstance] = Field(description="live processor instances")


@page_router.get("/", response_class=HTMLResponse, include_in_schema=False)
def dashboard_page() -> HTMLResponse:
    # no-store: a page cached from an older version would run against a newer data shape
    return HTMLResponse(_page(), headers={"Cache-Control": "no-store"})


@data_router.get(
    "/dashboard/data",
    operation_id="getDashboardData",
    summary="The dashboard's batches and processors",
    response_model=DashboardData,
)
def dashboard_data(request: Request) -> DashboardData:
    """Batch counts by status, the most recent batches and the live processor instances,
    read at most once every two seconds however many ask."""
    readings: Readings = request.app.state.readings
    overview = readings.batches()
    return DashboardData(
        generated_at=datetime.now(UTC),
        batch_counts=overview.counts,
        batches=overview.recent,
        processors=readings.processors(),
    )


@cache
def _page() -> str:
    return files("initiator").joinpath("static/dashboard.html").read_text(encoding="utf-8")
