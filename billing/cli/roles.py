"""The role commands: ``billing initiator``, ``processor``, ``controller``, ``serve``."""

from __future__ import annotations

import contextlib
import logging
import os

import typer

from shared.domain.priority import PRIORITIES, Priority
from shared.health_endpoint import health_endpoint
from shared.settings import Settings
from shared.telemetry import configure_logging

log = logging.getLogger(__name__)


def initiator(
    host: str | None = typer.Option(None, help="Interface to listen on (BILLING_HOST)."),
    port: int | None = typer.Option(None, help="Port to listen on (BILLING_PORT)."),
    insecure_local: bool = typer.Option(
        False, help="Allow starting without BILLING_API_KEYS (local development only)."
    ),
) -> None:
    """Run the initiator: the HTTP API that takes batch files."""
    import uvicorn

    from initiator.app import create_app
    from initiator.auth import MissingApiKeysError
    from initiator.serving import server_config

    configure_logging()
    settings = Settings()
    if insecure_local:
        settings = settings.model_copy(update={"insecure_local": True})
    try:
        app = create_app(settings)
    except MissingApiKeysError as error:
        typer.echo(f"billing initiator: {error}", err=True)
        raise typer.Exit(1) from None
    config = server_config(
        app,
        settings,
        host=host or settings.host,
        port=port or settings.port,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
        server.run()
    if not server.started:
        raise typer.Exit(3)  # uvicorn's own code for a failed start-up


def processor(
    processes: int | None = typer.Option(
        None, "--processes", "-p", min=1, help="Worker processes (default: one per core)."
    ),
    priorities: str | None = typer.Option(
        None, help="Comma-separated priorities to serve (default BILLING_PROCESSOR_PRIORITIES)."
    ),
) -> None:
    """Run processors: rate the chunks on the work queues, one process per core."""
    from processor.supervisor import run_processors

    configure_logging()
    settings = Settings()
    served = settings.processor_priorities if priorities is None else _priorities(priorities)
    with health_endpoint(settings.health_port):
        clean = run_processors(
            settings, processes=processes or os.cpu_count() or 1, priorities=served
        )
    if not clean:
        raise typer.Exit(1)


def _priorities(text: str) -> list[Priority]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [p for p in chosen if p not in PRIORITIES]
    if unknown or not chosen:
        raise typer.BadParameter(f"use some of {', '.join(PRIORITIES)}", param_hint="--priorities")
    return [p for p in PRIORITIES if p in chosen]


def controller() -> None:
    """Run the controller: reduce rated chunks into the warehouse, close and reconcile."""
    from billing.controller_process import run_controller

    configure_logging()
    settings = Settings()
    with health_endpoint(settings.health_port):
        run_controller(settings)


def serve(
    all_in_one: bool = typer.Option(
        False, "--all-in-one", help="Run initiator, processor and controller in this process."
    ),
    host: str | None = typer.Option(None, help="Interface to listen on (BILLING_HOST)."),
    port: int | None = typer.Option(None, help="Port to listen on (BILLING_PORT)."),
    insecure_local: bool = typer.Option(
        False, help="Allow starting without BILLING_API_KEYS (local development only)."
    ),
) -> None:
    """Serve a small deployment from one process (no separate workers, no Service Bus)."""
    if not all_in_one:
        typer.echo(
            "The roles run as separate processes: 'billing initiator', 'billing processor' and "
            "'billing controller'. 'billing serve --all-in-one' runs all three in one process."
        )
        raise typer.Exit(2)
    from billing.all_in_one import run_all_in_one

    configure_logging()
    settings = Settings()
    if insecure_local:
        settings = settings.model_copy(update={"insecure_local": True})
    if not run_all_in_one(settings, host=host or settings.host, port=port or settings.port):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(initiator)
    app.command()(processor)
    app.command()(controller)
    app.command()(serve)
