"""Fixtures for the processor tests: a deployment on one backend, and workers that always stop.

``deployment`` is the embedded backend; ``any_deployment`` runs a test on the embedded
backend and on Azurite (storage only: the trigger bus stays embedded, there is no Service
Bus emulator). Resource names are unique per test so a shared Azurite never mixes tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from processor.worker import ProcessorWorker
from tests.processor.deployment import Deployment, deployment_settings, fast_worker_options
from tests.support.deployment_settings import azurite_connection_string

#: ``start_worker(deployment, **options)`` → a started worker, stopped at teardown.
WorkerStarter = Callable[..., ProcessorWorker]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    opened = Deployment.open(deployment_settings(tmp_path))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(params=["embedded", pytest.param("azurite", marks=pytest.mark.azurite)])
def any_deployment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    connection_string = azurite_connection_string(request, request.param == "azurite")
    opened = Deployment.open(deployment_settings(tmp_path, connection_string))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def start_worker() -> Iterator[WorkerStarter]:
    """Workers with their own storage and bus handles, as if each were its own process."""
    started: list[tuple[ProcessorWorker, Deployment]] = []

    def start(deployment: Deployment, **options: Any) -> ProcessorWorker:
        own = Deployment.open(deployment.settings, provision=False)
        worker = own.processor(**{**fast_worker_options(), **options})
        started.append((worker, own))
        worker.start()
        return worker

    yield start
    for worker, own in reversed(started):
        worker.stop(timeout=5)
        own.close()
