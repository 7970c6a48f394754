"""The warehouse-outage guard: an unreachable database pauses the listener; a bad message not."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import IntegrityError, OperationalError

from controller.outage import WarehouseOutageGuard
from shared.listener.retry import RetryLater


class Listener:
    def __init__(self) -> None:
        self.paused = threading.Event()
        self.resumed = threading.Event()

    def pause(self) -> None:
        self.paused.set()

    def resume(self) -> None:
        self.resumed.set()


def failing(error: Exception) -> Any:
    def handler(_lease: object) -> None:
        raise error

    return handler


def test_an_unreachable_warehouse_pauses_and_a_probe_resumes(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'w.sqlite3'}")
    down = OperationalError("SELECT 1", {}, Exception("connection refused"))
    guard = WarehouseOutageGuard(failing(down), engine, probe_seconds=0.05)
    listener = Listener()
    guard.attach(listener)
    with pytest.raises(RetryLater):
        guard.handle(object())  # type: ignore[arg-type]
    assert listener.paused.is_set()
    assert listener.resumed.wait(5), "the probe did not resume the listener"
    deadline = time.monotonic() + 5
    while guard.in_outage:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert guard.outages == 1
    guard.stop()
    engine.dispose()


def test_a_bad_message_is_left_to_the_usual_retries_and_poison(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'w.sqlite3'}")
    bad = IntegrityError("INSERT", {}, Exception("duplicate key"))
    guard = WarehouseOutageGuard(failing(bad), engine)
    listener = Listener()
    guard.attach(listener)
    with pytest.raises(IntegrityError):
        guard.handle(object())  # type: ignore[arg-type]
    assert not listener.paused.is_set()
    assert not guard.in_outage
    engine.dispose()
