"""``billing-healthcheck``: exit 0 when this container's role is healthy (HEALTHCHECK, compose).

A command of its own, not a ``billing`` subcommand: a health check runs every few seconds in
every container, and importing the whole ``billing`` command costs about a CPU-second where
this costs a third of one. One image runs every role, so one command answers for each:

* ``--url URL``: an HTTP check (compose asks the initiator's ``/readyz``);
* ``--servicebus``: an AMQP check of the Service Bus namespace in the settings (the
  emulator's image has no shell, so compose probes it from another container);
* otherwise the liveness file (``BILLING_LIVENESS_FILE``) that the processor and the
  controller touch while they are well, if it exists; and if it does not, the initiator's
  ``/healthz`` on ``BILLING_PORT`` (the image's default command is the initiator).
"""

from __future__ import annotations

import argparse
import sys
import urllib.request

from shared.liveness import MISSED_TOUCHES, age_seconds
from shared.settings import Settings

#: Each check must answer well inside the health check's own timeout.
HTTP_TIMEOUT_SECONDS = 3.0


def check(settings: Settings, *, url: str | None = None, servicebus: bool = False) -> None:
    """Return if healthy; raise with the reason if not."""
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
    target = url or f"http://127.0.0.1:{settings.port}/healthz"
    with urllib.request.urlopen(target, timeout=HTTP_TIMEOUT_SECONDS):
        pass  # a 4xx or 5xx raises HTTPError


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="billing-healthcheck", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--url", help="check this URL answers 2xx instead")
    parser.add_argument(
        "--servicebus", action="store_true", help="check the configured Service Bus instead"
    )
    args = parser.parse_args(argv)
    try:
        check(Settings(), url=args.url, servicebus=args.servicebus)
    except Exception as error:
        print(f"unhealthy: {type(error).__name__}: {error}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
