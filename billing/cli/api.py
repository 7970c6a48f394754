"""Where the commands that use the HTTP API find it: ``--url`` and ``--api-key``.

``--url`` falls back on ``BILLING_URL``, then on ``http://BILLING_HOST:BILLING_PORT`` (the
address ``billing initiator`` listens on by default); ``--api-key`` on ``BILLING_API_KEY``,
then on the first of ``BILLING_API_KEYS``. Failures (nobody listening, a refused key) are
raised as httpx errors and put in words by :mod:`billing.cli.failures`.
"""

from __future__ import annotations

from typing import Any

import httpx
import typer

from shared.settings import Settings

URL_OPTION = typer.Option(
    None,
    "--url",
    envvar="BILLING_URL",
    show_envvar=False,  # named in the help text, with the fallback
    help="The initiator's base URL (env BILLING_URL; default http://BILLING_HOST:BILLING_PORT, "
    "i.e. http://127.0.0.1:8000).",
)
API_KEY_OPTION = typer.Option(
    None,
    "--api-key",
    envvar="BILLING_API_KEY",
    show_envvar=False,
    help="An API key of the initiator (env BILLING_API_KEY; default the first of "
    "BILLING_API_KEYS).",
)


def base_url(url: str | None, settings: Settings | None = None) -> str:
    if url:
        return url.rstrip("/")
    settings = settings or Settings()
    return f"http://{settings.host}:{settings.port}"


def auth_headers(api_key: str | None, settings: Settings | None = None) -> dict[str, str]:
    settings = settings or Settings()
    key = api_key or (settings.api_keys[0].get_secret_value() if settings.api_keys else None)
    return {"Authorization": f"Bearer {key}"} if key else {}


def api_client(url: str | None, api_key: str | None, **options: Any) -> httpx.Client:
    """A client for the initiator at ``url`` (or its default) sending the key."""
    settings = Settings()
    options.setdefault("timeout", 30.0)
    return httpx.Client(
        base_url=base_url(url, settings), headers=auth_headers(api_key, settings), **options
    )


def get_json(client: httpx.Client, path: str, params: dict[str, Any] | None = None) -> Any:
    """The JSON of a 200 answer to ``GET path``; any other answer raises HTTPStatusError."""
    return client.get(path, params=params).raise_for_status().json()
