"""At start, a role waits for what it needs — storage, the trigger bus, the warehouse.

In docker compose (or any orchestrator) the roles may start before Azurite, the Service
Bus emulator or PostgreSQL answer. A role that exited on its first refused connection
would depend on a restart policy and log a stack trace per attempt; a role that waited
forever would hide a wrong setting. So each dependency is tried with a short exponential
back-off, every failed attempt is logged with its reason, and after
``BILLING_STARTUP_TIMEOUT_SECONDS`` the role gives up with an error that names what it
waited for (then its restart policy, if any, takes over).

Every check is a real request and idempotent: storage creates the role's queues, containers
and tables (what every role does first anyway, and it reaches the blob, queue and table
endpoints alike), the bus opens a sender on the trigger topic (which also proves the topic
exists), the warehouse runs ``SELECT 1``. The controller adds its
migration as one more check, so a warehouse still initialising delays it instead of
killing it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from tenacity import RetryCallState, Retrying, stop_after_delay, wait_exponential

from shared.provision import ensure_resources
from shared.settings import Settings
from shared.storage import open_storage

log = logging.getLogger(__name__)

#: Back-off between attempts: 0.5 s, 1 s, 2 s … capped, so a dependency that comes up is
#: noticed within a few seconds.
FIRST_WAIT_SECONDS = 0.5
MAX_WAIT_SECONDS = 5.0


class DependencyUnavailableError(RuntimeError):
    """A dependency did not answer within the start-up timeout."""


@dataclass(frozen=True)
class Dependency:
    """Something a role needs, and one cheap request that succeeds once it is there."""

    name: str
    check: Callable[[], object]


def wait_for(dependencies: Sequence[Dependency], *, timeout: float) -> None:
    """Check each dependency in turn, retrying for up to ``timeout`` seconds in all."""
    started = time.monotonic()
    for dependency in dependencies:
        remaining = max(timeout - (time.monotonic() - started), 0.0)
        _wait_for_one(dependency, remaining, timeout)
    log.info(
        "ready after %.1f s: %s",
        time.monotonic() - started,
        ", ".join(dependency.name for dependency in dependencies),
    )


def _wait_for_one(dependency: Dependency, remaining: float, timeout: float) -> None:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "waiting for %s (attempt %d, %.0f s so far, giving up after %.0f s): %s",
            dependency.name,
            state.attempt_number,
            state.seconds_since_start or 0.0,
            timeout,
            _reason(error),
        )

    retrying = Retrying(
        stop=stop_after_delay(remaining),
        wait=wait_exponential(multiplier=FIRST_WAIT_SECONDS, max=MAX_WAIT_SECONDS),
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        retrying(dependency.check)
    except Exception as error:
        raise DependencyUnavailableError(
            f"{dependency.name} is still unavailable after {timeout:.0f} s: {_reason(error)}"
        ) from error


def _reason(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__


# --- the checks -------------------------------------------------------------------------------
def storage_dependency(settings: Settings) -> Dependency:
    def check() -> None:
        storage = open_storage(settings)
        try:
            ensure_resources(settings, storage, None)
        finally:
            storage.close()

    return Dependency(f"storage ({_storage_endpoints(settings)})", check)


def _storage_endpoints(settings: Settings) -> str:
    """Where storage is, without the key: the endpoints of a connection string."""
    if settings.storage_account_url:
        return settings.storage_account_url
    if settings.storage_connection_string is None:
        return f"embedded, {settings.data_dir}"
    parts = dict(
        part.split("=", 1)
        for part in settings.storage_connection_string.get_secret_value().split(";")
        if "=" in part
    )
    keys = ("BlobEndpoint", "QueueEndpoint", "TableEndpoint")
    endpoints = [parts[key] for key in keys if key in parts]
    return ", ".join(endpoints) or f"account {parts.get('AccountName', '?')}"


def bus_dependency(settings: Settings) -> Dependency | None:
    """The Service Bus topic; ``None`` for the embedded bus (a local folder, always there)."""
    if not settings.uses_servicebus:
        return None
    from shared.bus.servicebus.probe import open_topic_sender

    return Dependency(
        f"Service Bus topic {settings.trigger_topic!r}", lambda: open_topic_sender(settings)
    )


def warehouse_dependency(settings: Settings) -> Dependency | None:
    """The warehouse server; ``None`` for SQLite (a local file: nothing to wait for)."""
    url = settings.resolved_warehouse_url
    if make_url(url).get_backend_name() == "sqlite":
        return None

    def check() -> None:
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        finally:
            engine.dispose()

    shown = make_url(url).render_as_string(hide_password=True)
    return Dependency(f"warehouse {shown}", check)


def role_dependencies(
    settings: Settings, *, warehouse: bool, extra: Sequence[Dependency] = ()
) -> list[Dependency]:
    """Storage, then the bus (when it is Service Bus), then the warehouse if the role reads
    it (when it is a server), then ``extra`` (the controller's migration)."""
    optional = [bus_dependency(settings), warehouse_dependency(settings) if warehouse else None]
    return [
        storage_dependency(settings),
        *(dependency for dependency in optional if dependency is not None),
        *extra,
    ]
