"""Hostile clients against the real HTTP stack: every wait and every amount of work bounded.

The initiator runs under uvicorn exactly as ``billing initiator`` serves it
(:mod:`tests.support.live_initiator`); clients are raw sockets that stall, drip or hang up.
Each test sets the timeouts it relies on well below its own waits, and asserts what the
server does (408, 503, closing, stopping work), never how long it took.
"""

from __future__ import annotations

import re
import socket
import time
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from billing.deployment import Deployment
from initiator.dependencies import Services
from tests.api.batch_files import csv_file, rows
from tests.api.harness import API_KEY, AUTH
from tests.api.observe import Trace
from tests.support.deployment_settings import SettingsFactory, stack_settings_factory
from tests.support.live_initiator import (
    ANSWER_TIMEOUT_SECONDS,
    LiveInitiator,
    answered,
    body_of,
    free_port,
    header_of,
    read_until_closed,
    request_head,
    serving,
    status_of,
)

SLOW_CLIENTS = 45
OTHER_KEY = "another-senders-key"  # more than anyio's default pool of 40 threads


@pytest.fixture
def make_settings(request: pytest.FixtureRequest, tmp_path: Path) -> SettingsFactory:
    return stack_settings_factory(request, tmp_path, on_azurite=False, api_keys=[API_KEY])


def post_head(length: int, content_type: str = "text/csv", **extra: str) -> bytes:
    headers = {
        "Authorization": f"Bearer {API_KEY}",
        "Content-Type": content_type,
        "Content-Length": str(length),
        **extra,
    }
    return request_head("POST", "/batches", headers)


def services_of(live: LiveInitiator) -> Services:
    services: Services = live.app.state.services
    return services


def nothing_kept(live: LiveInitiator) -> bool:
    services = services_of(live)
    trace = Trace.take(services.storage, services.settings)
    return not trace.blobs.get(services.settings.payload_container) and not trace.entities.get(
        services.settings.batches_table
    )


def test_headers_that_never_end_are_answered_408_and_the_connection_closed(
    make_settings: SettingsFactory,
) -> None:
    with serving(make_settings(request_header_timeout_seconds=1.0)) as live:
        with live.connect() as client:
            client.sendall(b"POST /batches HTTP/1.1\r\nHost: initiator\r\nContent-Le")
            answer = read_until_closed(client)
        assert status_of(answer) == 408
        # An idle kept-alive connection is not cut by it (uvicorn's keep-alive governs it).
        with httpx.Client(base_url=live.base_url) as http:
            assert http.get("/healthz").status_code == 200


def test_all_in_one_serves_the_api_with_the_same_header_timeout(
    make_settings: SettingsFactory,
) -> None:
    with Deployment(make_settings(request_header_timeout_seconds=1.0)) as deployment:
        port = free_port()
        deployment.start(deployment.initiator(port=port, log_level="warning"), front=True)
        address = ("127.0.0.1", port)
        with socket.create_connection(address, timeout=ANSWER_TIMEOUT_SECONDS) as client:
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: initiator\r\nAccept: app")
            answer = read_until_closed(client)
        assert status_of(answer) == 408


def test_a_body_that_stalls_is_answered_408_and_leaves_no_trace(
    make_settings: SettingsFactory,
) -> None:
    body = csv_file(rows(50))
    with serving(make_settings(request_body_idle_timeout_seconds=1.0, chunk_size=10)) as live:
        with live.connect() as client:
            client.sendall(post_head(len(body)) + body[: len(body) // 2])  # then nothing
            answer = read_until_closed(client)
        assert status_of(answer) == 408
        assert b"request body timed out" in body_of(answer)
        assert nothing_kept(live)


def test_a_body_dripped_a_byte_at_a_time_is_cut_off(make_settings: SettingsFactory) -> None:
    body = csv_file(rows(50))
    settings = make_settings(
        request_body_idle_timeout_seconds=1.0, request_body_min_bytes_per_second=1000
    )
    with serving(settings) as live, live.connect() as client:
        client.sendall(post_head(len(body)))
        for byte in body:  # never a pause of a second, but far below 1,000 bytes/s
            if answered(client):
                break
            client.sendall(bytes([byte]))
            time.sleep(0.05)
        answer = read_until_closed(client)
    assert status_of(answer) == 408, "the whole body went through a byte at a time"


def test_slow_clients_take_the_intake_slots_only_the_rest_is_served(
    make_settings: SettingsFactory,
) -> None:
    """45 stalled uploads: two hold the two intake slots, the others are answered 503 at
    once; the health check and the status routes answer throughout."""
    settings = make_settings(
        max_concurrent_intakes=2, max_intakes_per_sender=2, request_body_idle_timeout_seconds=120.0
    )
    small = csv_file(rows(3))
    with serving(settings) as live, ExitStack() as stack:
        clients = [stack.enter_context(live.connect()) for _ in range(SLOW_CLIENTS)]
        for client in clients:
            client.sendall(post_head(10_000) + b"transaction_id,")
        refused = _answers_from_all_but(clients, 2)
        assert {status_of(answer) for answer in refused.values()} == {503}
        for answer in refused.values():
            assert header_of(answer, "retry-after") == "5"
        with httpx.Client(base_url=live.base_url, timeout=ANSWER_TIMEOUT_SECONDS) as http:
            assert http.get("/healthz").status_code == 200
            assert http.get("/batches/none-such", headers=AUTH).status_code == 404
            busy = http.post("/batches", content=small, headers=_csv_headers())
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "5"
            # The two stalled uploads hang up: their slots come free.
            for client in clients:
                if client not in refused:
                    client.close()
            assert _accepted_eventually(http, small).status_code == 202


def test_one_sender_holding_its_share_of_slots_leaves_the_rest_to_the_others(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Five stalled uploads with one key take three of the four slots (the other two are
    told 503 at once); another key's uploads are still taken, one after the other."""
    settings = stack_settings_factory(
        request, tmp_path, on_azurite=False, api_keys=[API_KEY, OTHER_KEY]
    )(max_concurrent_intakes=4, request_body_idle_timeout_seconds=120.0)
    with serving(settings) as live, ExitStack() as stack:
        hogs = [stack.enter_context(live.connect()) for _ in range(5)]
        for client in hogs:
            client.sendall(post_head(10_000) + b"transaction_id,")
        refused = _answers_from_all_but(hogs, 3)
        assert {status_of(answer) for answer in refused.values()} == {503}
        assert all(b"this sender" in body_of(answer) for answer in refused.values())
        other = {"Authorization": f"Bearer {OTHER_KEY}", "Content-Type": "text/csv"}
        with httpx.Client(base_url=live.base_url, timeout=ANSWER_TIMEOUT_SECONDS) as http:
            answers = [http.post("/batches", content=csv_file(rows(3)), headers=other)]
            answers += [http.post("/batches", content=csv_file(rows(4)), headers=other)]
        assert [answer.status_code for answer in answers] == [202, 202]


def test_a_client_that_hangs_up_after_its_body_stops_the_intake(
    make_settings: SettingsFactory,
) -> None:
    """A 1 MB gzip body that inflates to 200 MB of valid lines: the parser works for a good
    while after the last byte came in. The client hangs up meanwhile; the intake stops and
    discards what it stored instead of accepting a batch nobody will hear about."""
    body = _padded_gzip_batch(lines=10_000, padding=20_000)
    with serving(make_settings(chunk_size=1000)) as live:
        with live.connect() as client:
            client.sendall(post_head(len(body), **{"Content-Encoding": "gzip"}) + body)
            time.sleep(0.5)  # the server reads the whole body (one block) and starts parsing
        with httpx.Client(base_url=live.base_url, timeout=ANSWER_TIMEOUT_SECONDS) as http:
            status = _status_of_finished_intake(http)
        assert status != 202, "the intake ran to the end for a client that had gone"
        assert nothing_kept(live)


def _csv_headers() -> dict[str, str]:
    return {**AUTH, "Content-Type": "text/csv"}


def _answers_from_all_but(clients: list[socket.socket], silent: int) -> dict[socket.socket, bytes]:
    """Wait until every client but ``silent`` of them has been answered (and closed)."""
    answers: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + ANSWER_TIMEOUT_SECONDS
    while len(answers) < len(clients) - silent:
        assert time.monotonic() < deadline, f"only {len(answers)} clients were answered"
        for client in clients:
            if client not in answers and answered(client):
                answers[client] = read_until_closed(client)
        time.sleep(0.05)
    time.sleep(0.2)
    assert not any(answered(c) for c in clients if c not in answers), "a slot was never taken"
    return answers


def _accepted_eventually(http: httpx.Client, body: bytes) -> httpx.Response:
    """POST until the answer is no longer 503 (the freed slots are noticed at once, but the
    hang-ups reach the server a moment after the sockets close)."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_SECONDS
    while True:
        response = http.post("/batches", content=body, headers=_csv_headers())
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(0.1)


def _status_of_finished_intake(http: httpx.Client) -> int:
    """The status the server gave the one POST /batches, once its handler has ended (the
    HTTP metrics count a request when its answer is sent, or dropped)."""
    pattern = re.compile(
        r'billing_http_requests_total\{method="POST",route="/batches",status="(\d+)"\} 1\.0'
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = pattern.search(http.get("/metrics", headers=AUTH).text)
        if found:
            return int(found.group(1))
        time.sleep(0.1)
    raise AssertionError("the intake did not end")


def _padded_gzip_batch(*, lines: int, padding: int) -> bytes:
    """Valid lines with a long ignored column: small compressed, long to parse."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    note = "x" * padding

    def parts() -> Iterator[bytes]:
        yield compressor.compress(
            b"transaction_id,customer_id,sku,quantity,region,occurred_at,note\n"
        )
        for number in range(lines):
            line = f"tx-{number:06d},cust-{number % 7},SEAT-PRO,1,EU,2025-03-01T10:00:00Z,{note}\n"
            yield compressor.compress(line.encode())
        yield compressor.flush()

    return b"".join(parts())
