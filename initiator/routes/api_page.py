"""``GET /docs``: the interactive API page, and the site's icon (``/favicon.svg``, ``.ico``).

Like the dashboard, the page is a public shell without data: a browser cannot put an
``Authorization`` header on a page load. Its script (``/static/api.js``, no third-party
code, so the page works offline) asks for the API key, fetches ``/openapi.json`` with it —
the document is behind the same key as every route — and lists the operations, each with a
form that calls it.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

router = APIRouter(include_in_schema=False)

SVG = "image/svg+xml"


@router.get("/docs", response_class=HTMLResponse)
def api_page() -> HTMLResponse:
    return HTMLResponse(_asset("api.html"), headers={"Cache-Control": "no-store"})


@router.get("/favicon.svg")
@router.get("/favicon.ico")  # what browsers ask for unless a page names its icon
def favicon() -> Response:
    return Response(
        _asset("favicon.svg"), media_type=SVG, headers={"Cache-Control": "max-age=86400"}
    )


@cache
def _asset(name: str) -> str:
    return files("initiator").joinpath(f"static/{name}").read_text(encoding="utf-8")
