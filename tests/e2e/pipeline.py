"""All three roles in this process, each on its own storage and bus handles.

    with running_pipeline(settings, processors=2) as pipeline:
        batch_id = pipeline.submit(path, priority="high")
        status = pipeline.wait_until_closed(batch_id)

The initiator is the real app served by uvicorn on a free loopback port and driven over
HTTP with ``httpx``; the processors are :class:`~processor.worker.ProcessorWorker` and the
controller a :class:`~controller.worker.ControllerWorker`, in threads. Each role opens its
own storage (and bus), as separate processes would, so nothing is shared but the backend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from billing.demo.cluster import free_port
from controller.worker import ControllerWorker
from initiator.app import create_app
from processor.worker import ProcessorWorker
from shared.bus import open_bus
from shared.domain.priority import Priority
from shared.listener_settings import listener_config
from shared.settings import Settings
from shared.storage import open_storage

START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 5.0
CLOSED = ("completed", "failed")


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
def serving_initiator(settings: Settings) -> Iterator[str]:
    """The initiator app on a real socket (uvicorn in a thread); yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="initiator", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not server.started:
            assert thread.is_alive(), "the initiator stopped while starting"
            assert time.monotonic() < deadline, "the initiator did not start in time"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_TIMEOUT_SECONDS * 2)


@contextmanager
def running_pipeline(settings: Settings, *, processors: int = 2) -> Iterator[RunningPipeline]:
    """Start the initiator (its start-up provisions every resource and installs the sample
    pricebook), the controller (it migrates the warehouse), then the processors."""
    with ExitStack() as stack:
        base_url = stack.enter_context(serving_initiator(settings))
        api_key = settings.api_keys[0].get_secret_value()
        client = stack.enter_context(
            httpx.Client(
                base_url=base_url,
                headers={"Authorization": f"Bearer {api_key}"},
                timeout=httpx.Timeout(30.0),
            )
        )

        controller_storage = open_storage(settings)
        stack.callback(controller_storage.close)
        controller = ControllerWorker(
            settings,
            controller_storage,
            listener_config=listener_config(settings, handler_parallelism=2),
        )
        controller.start()
        stack.callback(controller.stop, STOP_TIMEOUT_SECONDS)

        workers = []
        for _ in range(processors):
            storage, bus = open_storage(settings), open_bus(settings)
            stack.callback(storage.close)
            stack.callback(bus.close)
            worker = ProcessorWorker(settings, storage, bus, heartbeat_busy_seconds=1.0)
            worker.start()
            stack.callback(worker.stop, STOP_TIMEOUT_SECONDS)
            workers.append(worker)

        yield RunningPipeline(settings, client, workers, controller)
