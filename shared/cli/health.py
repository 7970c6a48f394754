"""``billing healthcheck``: exit 0 when this container's role is healthy (HEALTHCHECK, compose).

One image runs every role, so one command answers for each:

* ``--url URL``: an HTTP check (the initiator's ``/healthz``);
* ``--servicebus``: an AMQP check of the Service Bus namespace in the settings (the
  emulator's image has no shell, so compose probes it from another container);
* otherwise the liveness file (``BILLING_LIVENESS_FILE``) the processor and the controller
  touch while they are well, if it exists; and if it does not, the initiator's ``/healthz``
  on ``BILLING_PORT`` (the image's default command is the initiator).
"""

from __future__ import annotations

import typer

from shared.settings import Settings

#: Each check must answer well inside the health check's own timeout.
HTTP_TIMEOUT_SECONDS = 3.0


def healthcheck(
    url: str | None = typer.Option(None, help="Check this URL answers 2xx instead."),
    servicebus: bool = typer.Option(
        False, "--servicebus", help="Check the configured Service Bus namespace answers instead."
    ),
) -> None:
    """Exit 0 if the role in this container is healthy, 1 (with the reason) if not."""
    from shared.liveness import MISSED_TOUCHES, age_seconds

    settings = Settings()
    try:
        if servicebus:
            from shared.bus.servicebus.probe import open_topic_sender

            open_topic_sender(settings)
            return
        if url is None and settings.liveness_file is not None:
            age = age_seconds(settings.liveness_file)
            if age is not None:
                limit = MISSED_TOUCHES * settings.liveness_interval_seconds
                if age > limit:
                    raise RuntimeError(f"{settings.liveness_file} not touched for {age:.0f} s")
                return
        _check_http(url or f"http://127.0.0.1:{settings.port}/healthz")
    except Exception as error:
        typer.echo(f"unhealthy: {type(error).__name__}: {error}", err=True)
        raise typer.Exit(1) from None


def _check_http(url: str) -> None:
    import httpx

    httpx.get(url, timeout=HTTP_TIMEOUT_SECONDS).raise_for_status()


def register(app: typer.Typer) -> None:
    app.command()(healthcheck)
