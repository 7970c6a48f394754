"""The receiver docs/events.md shows (docs/examples/webhook_receiver.py), run as a real server:
it takes a delivery signed as the controller signs it, once per id, and refuses a forged
or a replayed one."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from standardwebhooks import Webhook

from shared.contracts.batch_event import Outcome, batch_event, encode
from shared.domain.transactions import ControlTotals

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "webhook_receiver.py"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("BILLING_WEBHOOK_SECRET", SECRET)
    spec = importlib.util.spec_from_file_location("webhook_receiver", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def receiver_url(example: ModuleType) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), example.Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def event_body() -> tuple[str, bytes]:
    totals = ControlTotals(transactions=3, quantity=9, id_checksum=2**64 - 1)
    event = batch_event(
        batch_id="b-1",
        outcome=Outcome.COMPLETED,
        time=datetime.now(UTC),
        priority="normal",
        chunks=1,
        chunks_applied=1,
        failed_chunks=(),
        control_totals=totals,
        warehouse_totals=totals,
        reconciled=True,
    )
    return str(event["id"]), encode(event)


def post(url: str, body: bytes, msg_id: str, at: datetime, secret: str = SECRET) -> int:
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, at, body),
        "content-type": "application/cloudevents+json",
    }
    return httpx.post(url, content=body, headers=headers).status_code


def test_a_signed_delivery_is_taken_and_its_retry_handled_once(
    example: ModuleType, receiver_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    msg_id, body = event_body()

    assert post(receiver_url, body, msg_id, datetime.now(UTC)) == 204
    assert post(receiver_url, body, msg_id, datetime.now(UTC)) == 204  # a retry: same id

    assert example.seen == {msg_id}
    assert capsys.readouterr().out.splitlines() == ["billing.batch.completed b-1 True"]


def test_a_delivery_signed_with_another_secret_is_refused(
    example: ModuleType, receiver_url: str
) -> None:
    msg_id, body = event_body()

    assert post(receiver_url, body, msg_id, datetime.now(UTC), secret=OTHER_SECRET) == 400
    assert example.seen == set()


def test_a_tampered_body_is_refused(example: ModuleType, receiver_url: str) -> None:
    msg_id, body = event_body()
    now = datetime.now(UTC)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(SECRET).sign(msg_id, now, body),
    }
    forged = body.replace(b'"reconciled":true', b'"reconciled":false')
    assert forged != body

    assert httpx.post(receiver_url, content=forged, headers=headers).status_code == 400
    assert example.seen == set()


def test_a_replayed_delivery_with_an_old_timestamp_is_refused(
    example: ModuleType, receiver_url: str
) -> None:
    """A captured delivery sent again later: its signature is genuine, its time too old."""
    msg_id, body = event_body()

    assert post(receiver_url, body, msg_id, datetime.now(UTC) - timedelta(minutes=10)) == 400
    assert example.seen == set()
