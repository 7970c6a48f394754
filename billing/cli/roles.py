"""The role commands: ``billing initiator``, ``processor``, ``controller``, ``serve``."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Iterator
from types import FrameType

import typer

from billing.runtime import tune_runtime
from billing.startup import Dependency, DependencyUnavailableError, role_dependencies, wait_for
from shared.domain.priority import PRIORITIES, Priority
from shared.health_endpoint import health_endpoint
from shared.liveness import liveness_file
from shared.role_health import RoleHealth
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
    _wait_for_dependencies("initiator", settings, warehouse=True)  # it reads invoices there
    try:
        app = create_app(settings)
    except MissingApiKeysError as error:
        typer.echo(f"billing initiator: {error}", err=True)
        raise typer.Exit(1) from None
    tune_runtime(settings, event_loop=True)
    config = server_config(
        app,
        settings,
        host=host or settings.host,
        port=port or settings.port,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    # uvicorn stops gracefully on SIGTERM, then raises the signal again for the handler it
    # found. Python's default would kill the process there, skipping interpreter exit, where
    # the intake helpers' pool shuts down; exiting instead ends them in order.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
        server.run()
    if not server.started:
        raise typer.Exit(3)  # uvicorn's own code for a failed start-up


def _exit_cleanly(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def processor(
    processes: int | None = typer.Option(
        None,
        "--processes",
        "-p",
        min=1,
        help="Worker processes (default: one per CPU this process may use, see processor.cpus).",
    ),
    priorities: str | None = typer.Option(
        None, help="Comma-separated priorities to serve (default BILLING_PROCESSOR_PRIORITIES)."
    ),
) -> None:
    """Run processors: rate the chunks on the work queues, one process per core."""
    from billing.processor_process import run_processors
    from processor.cpus import available_cpus

    configure_logging()
    settings = Settings()
    served = settings.processor_priorities if priorities is None else _priorities(priorities)
    with _health_signals(settings) as health:
        _wait_for_dependencies("processor", settings, warehouse=False)
        clean = run_processors(
            settings, health, processes=processes or available_cpus(), priorities=served
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
    from shared.warehouse import upgrade

    configure_logging()
    settings = Settings()
    url = settings.resolved_warehouse_url
    migration = Dependency("the warehouse migration", lambda: upgrade(url))
    with _health_signals(settings) as health:
        _wait_for_dependencies("controller", settings, warehouse=True, extra=[migration])
        tune_runtime(settings)
        run_controller(settings, health)


@contextlib.contextmanager
def _health_signals(settings: Settings) -> Iterator[RoleHealth]:
    """A worker role's health for the block, for it to register its probe in, answered on
    ``GET /healthz`` (``BILLING_HEALTH_PORT``) and by the liveness file
    (``BILLING_LIVENESS_FILE``) from before its dependency waits: a platform probing a role
    that waits for its database hears "starting", not nothing."""
    health = RoleHealth()
    with health_endpoint(settings.health_port, health), liveness_file(settings, health):
        yield health


def _wait_for_dependencies(
    role: str, settings: Settings, *, warehouse: bool, extra: list[Dependency] | None = None
) -> None:
    """Wait (bounded, logged) for what the role needs; exit 1 naming what never came."""
    dependencies = role_dependencies(settings, warehouse=warehouse, extra=extra or [])
    try:
        wait_for(dependencies, timeout=settings.startup_timeout_seconds)
    except DependencyUnavailableError as error:
        typer.echo(f"billing {role}: {error}", err=True)
        raise typer.Exit(1) from None


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
