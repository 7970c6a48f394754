"""How a command that talks to the initiator or to storage fails: one line, not a traceback.

The line says what the command tried, what happened and what to do, on stderr, and the
command exits non-zero: 2 when it could not reach what it needed (the initiator, the
storage account, the data folder), 1 when it was answered with a refusal or an error.
:class:`billing.cli.app.LazyCommands` runs every tool command under :func:`explained`, so
the commands themselves only raise.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer

#: Could not reach what the command needs (also click's code for a usage error).
UNREACHABLE = 2
#: Reached it; it refused or failed.
REFUSED = 1


class CommandError(Exception):
    """A failure already put in words: printed as is, then exit ``exit_code``."""

    def __init__(self, message: str, exit_code: int = REFUSED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@contextmanager
def explained(command: Callable[[], str | None]) -> Iterator[None]:
    """Turn the failures of talking to the API or to storage into one line and an exit code.

    ``command()`` names the command that ran (for the line), or None to let its exceptions
    through untouched."""
    try:
        yield
    except Exception as error:
        name = command()
        if name is None:
            raise
        if isinstance(error, CommandError):
            _fail(name, str(error), error.exit_code)
        described = describe(error)
        if described is None:
            raise
        _fail(name, *described)


def describe(error: Exception) -> tuple[str, int] | None:
    """What ``error`` means for a user, and the exit code; None for a failure we do not know."""
    import httpx

    if isinstance(error, httpx.TransportError):
        return _unreachable_api(error), UNREACHABLE
    if isinstance(error, httpx.HTTPStatusError):
        return api_refusal(error.response), REFUSED
    azure = _azure_failure(error)
    if azure is not None:
        return azure
    warehouse = _warehouse_failure(error)
    if warehouse is not None:
        return warehouse
    demo = _demo_failure(error)
    if demo is not None:
        return demo
    from pydantic import ValidationError

    if isinstance(error, ValidationError) and error.title == "Settings":
        return _bad_settings(error), UNREACHABLE
    return None


def _fail(command: str, message: str, exit_code: int) -> NoReturn:
    typer.echo(f"billing {command}: {message}", err=True)
    raise typer.Exit(exit_code)


def _origin(url: Any) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii', errors='replace')}"


def _unreachable_api(error: Any) -> str:
    try:
        where = f" at {_origin(error.request.url)}"
    except RuntimeError:  # an error raised before any request was made
        where = ""
    return (
        f"cannot reach the initiator{where}: {error or type(error).__name__}; start it "
        "(billing initiator, or billing demo --stay) or point --url or BILLING_URL at it"
    )


def api_refusal(response: Any) -> str:
    """``GET http://…/batches/x answered 404 Not Found: …`` and, for a 401, what to do."""
    try:
        body = response.json()
    except ValueError:
        body = None
    title = detail = None
    if isinstance(body, dict):
        title, detail = body.get("title"), body.get("detail")
    said = ": ".join(str(part) for part in (title, detail) if part) or response.text[:200]
    request = response.request
    message = (
        f"{request.method} {request.url} answered {response.status_code} "
        f"{response.reason_phrase}" + (f": {said}" if said else "")
    )
    if response.status_code == 401:
        message += "; pass --api-key or set BILLING_API_KEY to one of the initiator's keys"
    return message


def _azure_failure(error: Exception) -> tuple[str, int] | None:
    try:
        from azure.core.exceptions import (
            ClientAuthenticationError,
            HttpResponseError,
            ServiceRequestError,
        )
    except ImportError:  # pragma: no cover (a dependency of the project)
        return None
    from billing.cli.store import describe_store

    if isinstance(error, ServiceRequestError):
        return (
            f"cannot reach the {describe_store()}: {_first_line(error)}; is the account (or "
            "Azurite) running? check BILLING_STORAGE_CONNECTION_STRING or "
            "BILLING_STORAGE_ACCOUNT_URL",
            UNREACHABLE,
        )
    if isinstance(error, ClientAuthenticationError):
        return (
            f"the {describe_store()} refused the credentials: {_first_line(error)}; check the "
            "account key in BILLING_STORAGE_CONNECTION_STRING (or your Azure sign-in)",
            REFUSED,
        )
    if isinstance(error, HttpResponseError):
        return f"the {describe_store()} answered: {_first_line(error)}", REFUSED
    return None


def _warehouse_failure(error: Exception) -> tuple[str, int] | None:
    if "sqlalchemy" not in sys.modules:  # only a command that used the warehouse can fail so
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, OperationalError

    from shared.settings import Settings

    if not isinstance(error, OperationalError | ArgumentError):
        return None
    try:
        url = make_url(Settings().resolved_warehouse_url).render_as_string(hide_password=True)
    except ArgumentError:
        url = "BILLING_WAREHOUSE_URL"
    hint = "is the database running? " if isinstance(error, OperationalError) else ""
    return (
        f"cannot use the warehouse at {url}: {_first_line(error)}; {hint}check "
        "BILLING_WAREHOUSE_URL",
        UNREACHABLE,
    )


def _demo_failure(error: Exception) -> tuple[str, int] | None:
    """``billing demo``: a role that died (its log's end), or no Azurite to start."""
    if "billing.demo.cluster" not in sys.modules:
        return None
    from billing.demo.cluster import RoleExitedError
    from billing.devtools.azurite import AzuriteUnavailableError

    if isinstance(error, RoleExitedError):
        return str(error), REFUSED
    if isinstance(error, AzuriteUnavailableError):
        return f"{error}; the embedded backend needs no server: --backend embedded", UNREACHABLE
    return None


def _bad_settings(error: Any) -> str:
    problems = "; ".join(
        f"BILLING_{'_'.join(map(str, problem['loc'])).upper()}: {problem['msg']}"
        for problem in error.errors()
    )
    return f"the settings are not valid: {problems}"


def _first_line(error: Exception) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]
