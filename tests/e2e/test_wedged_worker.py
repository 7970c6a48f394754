"""A worker whose handler is stuck on one message past ``BILLING_WEDGED_HANDLER_SECONDS``
answers ``/readyz`` 503, naming the handler's thread and how long, over real HTTP, and
``200 ok`` again once the handler returns; ``/healthz`` stays ``ok`` meanwhile.

Both on the embedded backend, with their real listener, readiness probe and health
endpoint; only the handler's work is replaced by a wait, as a read from a socket that never
answers would. The controller runs in this process; the processor's supervisor here, and
its worker process spawned as ``billing processor`` spawns it, so the report crosses from
the worker process to the supervisor that answers the probe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from billing.controller_process import listener_probe, ready_probe
from billing.demo.cluster import free_port
from billing.deployment import Deployment
from billing.processor_process import wedged_probe, workers_probe
from controller.results import ResultHandler
from processor.supervisor import ProcessorSupervisor
from shared.health_endpoint import HealthEndpoint
from shared.role_health import RoleHealth
from tests.processor import wedged_worker
from tests.support.deployment_settings import deployment_values, settings_factory


def _get(port: int, path: str) -> tuple[int, str]:
    response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    return response.status_code, response.text


def _poll(
    port: int, path: str, until: Callable[[tuple[int, str]], bool], timeout: float = 5.0
) -> tuple[int, str]:
    """Ask ``path`` until its answer satisfies ``until`` (``timeout`` s at most); the last
    answer."""
    deadline = time.monotonic() + timeout
    answer = _get(port, path)
    while not until(answer) and time.monotonic() < deadline:
        time.sleep(0.02)
        answer = _get(port, path)
    return answer


def test_a_controller_with_a_handler_stuck_past_the_threshold_is_not_ready_until_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_factory(
        deployment_values(tmp_path, partitions=1, wedged_handler_seconds=0.2)
    )()
    entered = threading.Event()
    release = threading.Event()

    def hung(handler: ResultHandler, text: str) -> None:
        entered.set()
        release.wait(10)

    monkeypatch.setattr(ResultHandler, "handle_text", hung)
    health = RoleHealth()
    port = free_port()
    with Deployment(settings) as deployment, HealthEndpoint(port, health, "127.0.0.1"):
        storage, _bus = deployment.connections()
        worker = deployment.controller(trigger=False)
        try:
            worker.start()
            health.register(listener_probe(worker), ready_probe=ready_probe(worker))
            storage.queue(settings.output_queue).send("a result")
            assert entered.wait(5)
            unready = _poll(port, "/readyz", lambda answer: "busy for" in answer[1])
            live = _get(port, "/healthz")
            release.set()
            ready = _poll(port, "/readyz", lambda answer: answer[0] == 200)
        finally:
            release.set()
            worker.stop(2.0)

    status, reason = unready
    assert status == 503
    assert reason.startswith(f"handler thread controller-{worker.instance_id}-dequeue-1")
    assert " busy for " in reason
    assert " (over 0.2 s) with message " in reason
    assert reason.endswith(f" of {settings.output_queue}\n")
    assert live == (200, "ok\n")  # a stuck handler does not make the role unwell
    assert ready == (200, "ok\n")


def test_a_processor_whose_worker_process_has_a_stuck_handler_is_not_ready_until_it_returns(
    tmp_path: Path,
) -> None:
    settings = settings_factory(
        deployment_values(tmp_path, partitions=1, wedged_handler_seconds=0.2)
    )()
    with Deployment(settings) as deployment:  # creates the resources, as billing processor does
        storage, _bus = deployment.connections()
        storage.queue(settings.work_queue("normal", 0)).send("a work item")
    supervisor = ProcessorSupervisor(
        settings, processes=1, priorities=["normal"], worker_main=wedged_worker.main
    )
    health = RoleHealth()
    port = free_port()
    with HealthEndpoint(port, health, "127.0.0.1"):
        supervisor.start()
        try:
            health.register(workers_probe(supervisor), ready_probe=wedged_probe(supervisor))
            unready = _poll(port, "/readyz", lambda answer: "busy for" in answer[1], timeout=20)
            live = _get(port, "/healthz")
            wedged_worker.release_file(settings).touch()
            ready = _poll(port, "/readyz", lambda answer: answer[0] == 200)
        finally:
            wedged_worker.release_file(settings).touch()
            clean = supervisor.stop(10)

    status, reason = unready
    assert status == 503
    assert reason.startswith("processor-0: handler thread processor-")
    assert " busy for " in reason
    assert " (over 0.2 s) with message " in reason
    assert reason.endswith(f" of {settings.work_queue('normal', 0)}\n")
    assert live == (200, "ok\n")
    assert ready == (200, "ok\n")
    assert clean
