"""Small exposures, closed: what a client sends never comes back to it or lands in a log.

* ``Location`` and ``status_url`` are relative, or built on ``BILLING_PUBLIC_BASE_URL``:
  never on the ``Host`` header, which the client chooses.
* ``billing initiator`` writes no access log, so a query string (say an API key someone put
  in ``?api_key=``) is not written anywhere.
* ``/static`` serves the dashboard's assets only, not the package's ``__init__.py``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from billing.demo.cluster import free_port
from tests.api.batch_files import csv_file, rows
from tests.api.harness import API_KEY, AUTH
from tests.support.deployment_settings import SettingsFactory, stack_settings_factory
from tests.support.live_initiator import (
    ANSWER_TIMEOUT_SECONDS,
    body_of,
    header_of,
    read_until_closed,
    request_head,
    serving,
    status_of,
)

BILLING = Path(sys.executable).with_name("billing")  # the console script


@pytest.fixture
def make_settings(request: pytest.FixtureRequest, tmp_path: Path) -> SettingsFactory:
    return stack_settings_factory(request, tmp_path, on_azurite=False, api_keys=[API_KEY])


def post_with_host(port: int, host: str) -> bytes:
    body = csv_file(rows(3))
    headers = {
        **AUTH,
        "Content-Type": "text/csv",
        "Content-Length": str(len(body)),
        "Connection": "close",
    }
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_SECONDS) as client:
        client.sendall(request_head("POST", "/batches", headers, host=host) + body)
        return read_until_closed(client)


def test_location_and_status_url_never_echo_the_host_header(
    make_settings: SettingsFactory,
) -> None:
    with serving(make_settings()) as live:
        answer = post_with_host(live.port, "evil.example")
    assert status_of(answer) == 202
    batch_id = json.loads(body_of(answer))["batch_id"]
    assert header_of(answer, "location") == f"/batches/{batch_id}"
    assert json.loads(body_of(answer))["status_url"] == f"/batches/{batch_id}"
    assert b"evil.example" not in answer


def test_the_public_base_url_makes_them_absolute(make_settings: SettingsFactory) -> None:
    settings = make_settings(public_base_url="https://billing.example.com/")
    with serving(settings) as live:
        answer = post_with_host(live.port, "evil.example")
    batch_id = json.loads(body_of(answer))["batch_id"]
    assert header_of(answer, "location") == f"https://billing.example.com/batches/{batch_id}"
    assert b"evil.example" not in answer


def test_static_serves_the_dashboard_assets_only(make_settings: SettingsFactory) -> None:
    with serving(make_settings()) as live, httpx.Client(base_url=live.base_url) as http:
        assert http.get("/static/dashboard.js").status_code == 200
        assert http.get("/static/dashboard.css").status_code == 200
        for path in ("/static/__init__.py", "/static/__pycache__/", "/static/../app.py"):
            response = http.get(path)
            assert response.status_code == 404, path
            assert response.json()["title"] == "Not Found"


def test_billing_initiator_logs_no_query_string(tmp_path: Path) -> None:
    secret = "leaked-key-4b1d"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BILLING_")}
    env |= {"BILLING_API_KEYS": API_KEY, "BILLING_DATA_DIR": str(tmp_path / "billing")}
    log_path = tmp_path / "initiator.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(BILLING), "initiator", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            _wait_until_healthy(http, process)
            assert http.get("/healthz", params={"api_key": secret}).status_code == 200
            assert http.get("/pricebook", params={"api_key": secret}).status_code == 401
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    logged = log_path.read_text(errors="replace")
    assert "Application startup complete" in logged  # the log was captured
    assert secret not in logged


def _wait_until_healthy(http: httpx.Client, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "billing initiator exited"
        assert time.monotonic() < deadline, "billing initiator did not become healthy"
        try:
            if http.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
