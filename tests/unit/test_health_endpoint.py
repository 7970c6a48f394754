"""The workers' health endpoint: real HTTP on a free loopback port, answering from the
role's health (starting, well, unwell with the reason, stopping)."""

from __future__ import annotations

import threading

import httpx
import pytest

from billing.demo.cluster import free_port
from shared import descriptors
from shared.descriptors import open_descriptors
from shared.health_endpoint import HealthEndpoint, health_endpoint
from shared.role_health import RoleHealth


def _get(port: int, path: str = "/healthz") -> tuple[int, str]:
    response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    return response.status_code, response.text


def test_it_answers_from_the_roles_health_and_nothing_else_until_closed() -> None:
    port = free_port()
    health = RoleHealth()
    well = threading.Event()
    with HealthEndpoint(port, health, host="127.0.0.1") as endpoint:
        assert endpoint.port == port
        starting = _get(port)
        health.register(lambda: None if well.is_set() else "the listener is not running")
        unwell = _get(port)
        well.set()
        ok = _get(port, "/healthz?probe=liveness")
        other = _get(port, "/metrics")
        health.withdraw()
        stopping = _get(port)
    assert starting == (200, "starting\n")  # waiting for dependencies: not to be killed
    assert unwell == (503, "the listener is not running\n")
    assert ok == (200, "ok\n")
    assert other == (404, "not found\n")
    assert stopping == (503, "stopping\n")
    with pytest.raises(httpx.ConnectError):
        _get(port)


def test_without_a_port_there_is_no_endpoint() -> None:
    with health_endpoint(None, RoleHealth()) as endpoint:
        assert endpoint is None


def test_readyz_is_stricter_than_healthz() -> None:
    port = free_port()
    health = RoleHealth()
    warehouse_up = threading.Event()
    with HealthEndpoint(port, health, host="127.0.0.1"):
        starting = _get(port, "/readyz")
        health.register(
            lambda: None,
            ready_probe=lambda: None if warehouse_up.is_set() else "the warehouse is unreachable",
        )
        outage = (_get(port, "/healthz"), _get(port, "/readyz"))
        warehouse_up.set()
        ready = _get(port, "/readyz")
    assert starting == (503, "starting\n")  # not to be killed, but not ready either
    assert outage == ((200, "ok\n"), (503, "the warehouse is unreachable\n"))
    assert ready == (200, "ok\n")


def test_a_process_nearly_out_of_descriptors_is_not_live(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    health = RoleHealth()
    health.register(lambda: None)
    with HealthEndpoint(port, health, host="127.0.0.1"):
        before = _get(port)
        # The real descriptors against a limit of half their count (lowering the real ulimit
        # would starve whatever else runs in the test process at that moment).
        open_now = open_descriptors()
        monkeypatch.setattr(descriptors, "descriptor_limit", lambda: open_now // 2)
        status = health.status()
        readiness = health.readiness()
        monkeypatch.undo()
        after = _get(port)
    assert before == (200, "ok\n")
    assert status.state == readiness.state == "unwell"
    assert "file descriptors open" in status.reason
    assert after == (200, "ok\n")
