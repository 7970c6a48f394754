"""All three roles in this process, each on its own storage and bus handles.

    with running_pipeline(settings, processors=2) as pipeline:
        batch_id = pipeline.submit(path, priority="high")
        status = pipeline.wait_until_closed(batch_id)

Assembled by :class:`billing.deployment.Deployment`: the initiator is the real app served by
uvicorn on a free loopback port and driven over HTTP with ``httpx``; the processors and the
controller run in threads. Each role has its own storage (and bus) handles, as separate
processes would, so nothing is shared but the backend.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from billing.demo.cluster import free_port
from billing.deployment import Deployment
from controller.worker import ControllerWorker
from processor.worker import ProcessorWorker
from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.priority import Priority
from shared.listener_settings import listener_config
from shared.settings import Settings

CLOSED = FINAL_STATUSES


@dataclass
class RunningPipeline:
    settings: Settings
    client: httpx.Client  # on the initiator, with the API key
    processors: list[ProcessorWorker]
    controller: ControllerWorker

    def submit(self, path: Path, *, priority: Priority, headers: dict[str, str]) -> dict[str, Any]:
        """POST a batch file; the 202 answer's JSON."""
        response = self.client.post(
            "/batches", content=path.read_bytes(), params={"priority": priority}, headers=headers
        )
        assert response.status_code == 202, response.text
        accepted: dict[str, Any] = response.json()
        return accepted

    def wait_until_closed(
        self, batch_id: str, timeout: float = 60.0, closed: tuple[str, ...] = CLOSED
    ) -> dict[str, Any]:
        """Poll ``GET /batches/{id}`` until the batch is in one of the ``closed`` statuses."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = self.client.get(f"/batches/{batch_id}").raise_for_status().json()
            if status["status"] in closed:
                return status
            time.sleep(0.1)
        raise AssertionError(f"batch {batch_id} not closed within {timeout:.0f} s: {status}")


@contextmanager
def running_pipeline(settings: Settings, *, processors: int = 2) -> Iterator[RunningPipeline]:
    """Start the initiator (its start-up provisions every resource and installs the sample
    pricebook), the controller (it migrates the warehouse), then the processors."""
    with (
        Deployment(settings, own_connections=True, provision=False) as deployment,
        ExitStack() as stack,
    ):
        initiator = deployment.initiator(port=free_port(), log_level="warning")
        deployment.start(initiator, front=True)
        api_key = settings.api_keys[0].get_secret_value()
        client = stack.enter_context(
            httpx.Client(
                base_url=initiator.url,
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=httpx.Timeout(30.0),
            )
        )
        controller = deployment.start(
            deployment.controller(
                trigger=False, listener_config=listener_config(settings, handler_parallelism=2)
            )
        )
        workers = [
            deployment.start(deployment.processor(heartbeat_busy_seconds=1.0))
            for _ in range(processors)
        ]
        yield RunningPipeline(settings, client, workers, controller)
