"""The workers' health endpoint: real HTTP on a free loopback port, answering from the
role's health (starting, well, unwell with the reason, stopping)."""

from __future__ import annotations

import threading

import httpx
import pytest

from billing.demo.cluster import free_port
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
