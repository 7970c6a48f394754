"""Roles wait for their dependencies at start: bounded, logged retries on real connections."""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import pytest

from billing.startup import (
    Dependency,
    DependencyUnavailableError,
    bus_dependency,
    role_dependencies,
    wait_for,
    warehouse_dependency,
)
from shared.bus.servicebus.probe import open_topic_sender
from shared.settings import Settings
from tests.support.servicebus_broker import ServiceBusBroker


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_dependency_that_comes_up_late_is_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[float] = []

    def check() -> None:
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise ConnectionRefusedError("nothing listens yet")

    with caplog.at_level(logging.WARNING, logger="billing.startup"):
        wait_for([Dependency("the thing", check)], timeout=30)
    assert len(attempts) == 3
    waits = [r.getMessage() for r in caplog.records if "waiting for the thing" in r.getMessage()]
    assert len(waits) == 2
    assert "attempt 1" in waits[0]
    assert "ConnectionRefusedError: nothing listens yet" in waits[0]


def test_a_dependency_that_never_comes_gives_up_naming_it() -> None:
    def check() -> None:
        raise ConnectionRefusedError("still nothing")

    with pytest.raises(
        DependencyUnavailableError, match="the thing is still unavailable after 1 s"
    ):
        wait_for([Dependency("the thing", check)], timeout=1)


def test_the_warehouse_check_retries_a_refused_server_until_its_deadline(tmp_path: Path) -> None:
    """A PostgreSQL URL on a port where nothing listens is refused until the deadline."""
    port = _unused_port()
    settings = Settings(warehouse_url=f"postgresql+psycopg://u:secret@127.0.0.1:{port}/db")
    dependency = warehouse_dependency(settings)
    assert dependency is not None
    assert "secret" not in dependency.name
    with pytest.raises(DependencyUnavailableError, match="OperationalError"):
        wait_for([dependency], timeout=1.5)
    # SQLite is a local file, created by the controller's engine: nothing to wait for
    assert warehouse_dependency(Settings(data_dir=tmp_path / "not-yet")) is None


def test_storage_check_creates_every_resource(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    wait_for(role_dependencies(settings, warehouse=False), timeout=10)
    from shared.storage import open_storage

    storage = open_storage(settings)
    try:
        assert storage.queue(settings.output_queue).approximate_count() == 0
    finally:
        storage.close()


def test_bus_check_waits_for_the_broker_to_listen() -> None:
    broker = ServiceBusBroker()  # not listening yet: its port is refused
    broker.add_topic("triggers")
    settings = Settings(servicebus_connection_string=broker.connection_string)
    dependency = bus_dependency(settings)
    assert dependency is not None
    with pytest.raises(DependencyUnavailableError):
        wait_for([dependency], timeout=1)
    timer = threading.Timer(1.0, broker.start)
    timer.start()
    try:
        wait_for([dependency], timeout=30)
        open_topic_sender(settings)  # and once it is up, a plain probe passes at once
    finally:
        timer.join()
        broker.stop()
    assert not broker.errors


def test_bus_check_against_a_closed_port_fails() -> None:
    port = _unused_port()
    settings = Settings(
        servicebus_connection_string=(
            f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;"
        )
    )
    with pytest.raises(DependencyUnavailableError, match="Service Bus topic 'triggers'"):
        wait_for(role_dependencies(settings, warehouse=False)[1:], timeout=1)


def test_embedded_bus_needs_no_check(tmp_path: Path) -> None:
    assert bus_dependency(Settings(data_dir=tmp_path)) is None
