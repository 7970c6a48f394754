"""The workers' health endpoint: real HTTP on a free loopback port."""

from __future__ import annotations

import httpx
import pytest

from billing.demo.cluster import free_port
from shared.health_endpoint import HealthEndpoint, health_endpoint


def test_it_answers_healthz_and_nothing_else_until_closed() -> None:
    port = free_port()
    with HealthEndpoint(port, host="127.0.0.1") as endpoint:
        assert endpoint.port == port
        ok = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        other = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    assert (ok.status_code, ok.text) == (200, "ok\n")
    assert other.status_code == 404
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)


def test_without_a_port_there_is_no_endpoint() -> None:
    with health_endpoint(None) as endpoint:
        assert endpoint is None
