"""``/static``: the dashboard's assets, and nothing else of the folder they live in.

The folder is a Python package (so the assets install as package data): a plain
``StaticFiles`` would also serve its ``__init__.py`` and, once imported, ``__pycache__``.
Only files with an asset's suffix are served; anything else is a 404 like a missing file.
"""

from __future__ import annotations

from pathlib import PurePath

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

ASSET_SUFFIXES = frozenset({".css", ".js", ".html", ".svg", ".png", ".ico", ".woff2"})


class AssetFiles(StaticFiles):
    async def get_response(self, path: str, scope: Scope) -> Response:
        if PurePath(path).suffix.lower() not in ASSET_SUFFIXES:
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)
