"""One webhook attempt: a URL refused by the allow-list is not requested, a redirect is
recorded as a failed attempt, never followed, and the request goes to the address that was
checked (controller.events.webhooks)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from sqlalchemy import Engine, select

from controller.events.webhooks import RetryPolicy, WebhookSender, add_deliveries
from shared.settings import Settings
from shared.warehouse.models import DeliveryAttempt, WebhookDelivery
from tests.controller.test_event_relay import SECRET, engine, pending_event
from tests.support.webhook_server import webhook_server

__all__ = ["engine"]  # the fixture, used here


@pytest.fixture
def redirecting_server() -> Iterator[tuple[str, list[str]]]:
    """A server answering 302 to ``/elsewhere``; the paths it was asked for."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked.append(self.path)
            self.send_response(302)
            self.send_header("location", "/elsewhere")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", asked
    server.shutdown()
    server.server_close()


def one_delivery(engine: Engine, url: str) -> int:
    event_id = pending_event(engine)
    with engine.begin() as connection:
        add_deliveries(connection, event_id, [url])
        return int(connection.scalar(select(WebhookDelivery.delivery_id)) or 0)


def attempts(engine: Engine) -> list[tuple[int | None, str | None]]:
    with engine.connect() as connection:
        rows = connection.execute(select(DeliveryAttempt.status_code, DeliveryAttempt.error))
        return [(row.status_code, row.error) for row in rows]


def test_a_url_the_allow_list_refuses_is_not_requested_and_the_attempt_says_why(
    engine: Engine, redirecting_server: tuple[str, list[str]]
) -> None:
    url, asked = redirecting_server
    sender = WebhookSender(engine, SECRET, RetryPolicy((0.0, 60.0)))  # loopback not allowed

    assert sender.attempt(one_delivery(engine, url)) is False

    assert asked == []
    [(status, error)] = attempts(engine)
    assert status is None
    assert error is not None
    assert error.startswith("not sent: the host '127.0.0.1' resolves to 127.0.0.1")
    with engine.connect() as connection:
        delivery = connection.execute(select(WebhookDelivery)).one()
    assert delivery.state == "pending"
    assert delivery.next_attempt_at > datetime.now(UTC)
    sender.close()


def test_a_redirect_is_a_failed_attempt_and_is_not_followed(
    engine: Engine, redirecting_server: tuple[str, list[str]]
) -> None:
    url, asked = redirecting_server
    sender = WebhookSender(engine, SECRET, RetryPolicy((0.0,)), allowed_networks=["127.0.0.0/8"])

    assert sender.attempt(one_delivery(engine, url)) is False

    assert asked == ["/hook"]  # /elsewhere never asked for
    assert attempts(engine) == [(302, "a redirect, not followed")]
    sender.close()


def test_the_request_goes_to_the_address_checked_with_the_host_named(engine: Engine) -> None:
    """The name is resolved once, for the check, and the request made to that address: a
    name that resolved elsewhere a moment later (DNS rebinding) would not be asked again."""
    with webhook_server() as (url, received):
        port = httpx.URL(url).port
        lookups: list[str] = []

        def resolve(host: str, port: int) -> list[str]:
            lookups.append(host)
            return ["127.0.0.1"]

        sender = WebhookSender(
            engine, SECRET, RetryPolicy((0.0,)), allowed_networks=["127.0.0.0/8"], resolve=resolve
        )
        named = f"http://hooks.billing.test:{port}/hooks/billing"  # in no DNS at all

        assert sender.attempt(one_delivery(engine, named)) is True
        sender.close()

    assert lookups == ["hooks.billing.test"]
    [(headers, _, status)] = received.requests
    host = {name.lower(): value for name, value in headers.items()}["host"]
    assert (host, status) == (f"hooks.billing.test:{port}", 204)


@pytest.mark.parametrize("secret", ["plain-text", "whsec_abc", "whsec_!!!!not-base64!!!!"])
def test_a_malformed_secret_stops_the_start_without_showing_it(engine: Engine, secret: str) -> None:
    settings = Settings(_env_file=None, webhook_secret=secret)  # type: ignore[call-arg]

    with pytest.raises(ValueError, match="whsec_ followed by the base64") as refused:
        WebhookSender.from_settings(engine, settings)
    assert secret not in str(refused.value)
