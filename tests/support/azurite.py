"""Azurite for the test suite: the session fixture ``azurite`` yields an :class:`AzuriteInfo`.

The launcher lives in :mod:`billing.devtools.azurite` (the demo uses it too). Without Node the
Azurite tests are skipped with a message that says so, except under CI (``CI`` set), where
they fail: CI must prove both backends.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import NoReturn

import pytest

from billing.devtools.azurite import (
    AzuriteInfo,
    AzuriteServer,
    AzuriteUnavailableError,
    azurite_dir,
    ensure_azurite,
    free_ports,
)

__all__ = ["AzuriteInfo", "azurite", "free_ports", "running_azurite", "unavailable"]


def unavailable(reason: str, tool: str = "Azurite") -> NoReturn:
    """Skip on a developer machine; fail under CI, where a skipped backend is a hole."""
    if os.environ.get("CI"):
        pytest.fail(f"{tool} is required under CI: {reason}", pytrace=False)
    pytest.skip(f"{tool} tests skipped: {reason}")


@contextlib.contextmanager
def running_azurite() -> Iterator[AzuriteInfo]:
    """An Azurite of the caller's own, stopped when the block ends."""
    try:
        server = AzuriteServer(ensure_azurite(azurite_dir()))
    except AzuriteUnavailableError as error:
        unavailable(str(error))
    try:
        info = server.start()
    except AzuriteUnavailableError as error:
        server.close()
        unavailable(str(error))
    try:
        yield info
    finally:
        server.close()


@pytest.fixture(scope="session")
def azurite() -> Iterator[AzuriteInfo]:
    """A running Azurite for the whole session (started on first use, stopped at the end)."""
    with running_azurite() as info:
        yield info
