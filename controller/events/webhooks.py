"""Webhook deliveries: each published event POSTed to each subscriber URL, signed, retried.

A delivery is one event to one URL (a row of ``webhook_deliveries``); each HTTP request is
an attempt (a row of ``webhook_attempts``). Requests follow Standard Webhooks: the body is
the CloudEvent, the headers ``webhook-id`` (the event id, the same on every attempt: the
receiver's key to de-duplicate), ``webhook-timestamp`` (the attempt's time, so a receiver
can refuse old replays) and ``webhook-signature`` (``v1,`` + base64 HMAC-SHA256 of
``id.timestamp.body`` with the deployment's ``whsec_`` secret; the ``standardwebhooks``
library signs). A 2xx answer delivers; anything else, or no answer, schedules the next
attempt after the wait ``BILLING_WEBHOOK_RETRY_SCHEDULE`` gives, with jitter, until the
schedule ends (Standard Webhooks' own schedule spans about 27 hours). Redirects are not
followed and the URL is checked again before every attempt
(:mod:`shared.events.callback_urls`).

Several controllers may share the table: each claims a due delivery with a conditional
update of its ``next_attempt_at`` before sending, so one attempt is made at a time.
"""

from __future__ import annotations

import base64
import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import Connection, Engine, insert, select, update
from standardwebhooks import Webhook

from shared.events.callback_urls import (
    CallbackRefusedError,
    Resolver,
    checked_addresses,
    resolve_host,
)
from shared.settings import Settings
from shared.warehouse.models import DeliveryAttempt, OutboxEvent, WebhookDelivery

log = logging.getLogger(__name__)

PENDING, DELIVERED, GAVE_UP = "pending", "delivered", "gave_up"
#: Due deliveries taken per look.
_BATCH = 32


@dataclass(frozen=True)
class RetryPolicy:
    """Waits before each attempt (the first counted from the event) and their jitter.

    The jitter only lengthens a wait (by up to ``jitter`` of it), so that deliveries failing
    together spread out and the schedule's total, over a day by default, is a minimum."""

    schedule: tuple[float, ...]
    jitter: float = 0.2

    def wait_before(self, attempt: int) -> float | None:
        """Seconds before attempt number ``attempt`` (0-based); None past the schedule."""
        if attempt >= len(self.schedule):
            return None
        base = self.schedule[attempt]
        return base * (1 + random.uniform(0, self.jitter))


def add_deliveries(connection: Connection, event_id: str, urls: Iterable[str]) -> None:
    """Queue the event for each URL (in the caller's transaction), due at once."""
    now = datetime.now(UTC)
    rows = [
        {"event_id": event_id, "url": url, "state": PENDING, "attempts": 0, "next_attempt_at": now}
        for url in dict.fromkeys(urls)
    ]
    if rows:
        connection.execute(insert(WebhookDelivery), rows)


def checked_secret(secret: str) -> str:
    """``secret`` if it is ``whsec_`` and the base64 of at least 16 bytes (Standard
    Webhooks); a ValueError that does not repeat it otherwise (it would land in a log)."""
    try:
        if len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) >= 16:
            return secret
    except ValueError:
        pass
    raise ValueError(
        "BILLING_WEBHOOK_SECRET must be whsec_ followed by the base64 of at least 16 random "
        "bytes, e.g. whsec_$(head -c 24 /dev/urandom | base64)"
    )


class WebhookSender:
    """Makes the attempts that are due, and records each one."""

    def __init__(
        self,
        engine: Engine,
        secret: str,
        policy: RetryPolicy,
        *,
        timeout: float = 10.0,
        allowed_networks: Sequence[str] = (),
        client: httpx.Client | None = None,
        resolve: Resolver = resolve_host,
    ) -> None:
        self._engine = engine
        self._signer = Webhook(secret)
        self._policy = policy
        self._allowed = tuple(allowed_networks)
        self._resolve = resolve
        self._client = client or httpx.Client(timeout=timeout, follow_redirects=False)

    @classmethod
    def from_settings(cls, engine: Engine, settings: Settings) -> WebhookSender | None:
        """The sender ``settings`` describe; None without ``BILLING_WEBHOOK_SECRET``."""
        if settings.webhook_secret is None:
            return None
        return cls(
            engine,
            checked_secret(settings.webhook_secret.get_secret_value()),
            RetryPolicy(tuple(settings.webhook_retry_schedule), settings.webhook_retry_jitter),
            timeout=settings.webhook_timeout_seconds,
            allowed_networks=settings.callback_allowed_networks,
        )

    def close(self) -> None:
        self._client.close()

    def deliver_due(self) -> int:
        """Attempt every delivery whose time has come; how many attempts were made."""
        now = datetime.now(UTC)
        query = (
            select(WebhookDelivery.delivery_id, WebhookDelivery.next_attempt_at)
            .where(WebhookDelivery.state == PENDING, WebhookDelivery.next_attempt_at <= now)
            .order_by(WebhookDelivery.next_attempt_at)
            .limit(_BATCH)
        )
        with self._engine.connect() as connection:
            due = connection.execute(query).all()
        made = 0
        for delivery_id, seen in due:
            if self._claim(delivery_id, seen):
                self.attempt(delivery_id)
                made += 1
        return made

    def _claim(self, delivery_id: int, seen: datetime | None) -> bool:
        """Push the delivery's time past this attempt, if no other sender did first."""
        hold = datetime.now(UTC) + timedelta(seconds=self._client.timeout.read or 10.0) * 3
        statement = (
            update(WebhookDelivery)
            .where(
                WebhookDelivery.delivery_id == delivery_id,
                WebhookDelivery.state == PENDING,
                WebhookDelivery.next_attempt_at == seen,
            )
            .values(next_attempt_at=hold)
        )
        with self._engine.begin() as connection:
            return connection.execute(statement).rowcount == 1

    def attempt(self, delivery_id: int) -> bool:
        """One signed POST of the delivery's event to its URL, recorded; True if delivered."""
        query = (
            select(WebhookDelivery.url, WebhookDelivery.attempts, OutboxEvent.event_id)
            .add_columns(OutboxEvent.body)
            .join(OutboxEvent, OutboxEvent.event_id == WebhookDelivery.event_id)
            .where(WebhookDelivery.delivery_id == delivery_id)
        )
        with self._engine.connect() as connection:
            url, attempts, event_id, body = connection.execute(query).one()
        status, error = self._post(url, event_id, body.encode())
        delivered = status is not None and 200 <= status < 300
        self._record(delivery_id, attempts, status, error, delivered)
        return delivered

    def _post(self, url: str, event_id: str, body: bytes) -> tuple[int | None, str | None]:
        try:
            addresses = checked_addresses(url, self._allowed, resolve=self._resolve)
        except CallbackRefusedError as refused:
            return None, f"not sent: {refused}"
        now = datetime.now(UTC)
        target = httpx.URL(url)
        headers = {
            "host": target.netloc.decode("ascii"),
            "content-type": "application/cloudevents+json",
            "webhook-id": event_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self._signer.sign(event_id, now, body),
        }
        try:
            # To the address just checked, not the name (which could resolve elsewhere by
            # now); TLS still names and verifies the host (the SNI extension).
            response = self._client.post(
                target.copy_with(host=addresses[0]),
                content=body,
                headers=headers,
                extensions={"sni_hostname": target.host},
            )
        except httpx.HTTPError as error:
            return None, f"{type(error).__name__}: {error}"[:512]
        if 300 <= response.status_code < 400:
            return response.status_code, "a redirect, not followed"
        return response.status_code, None

    def _record(
        self, delivery_id: int, attempts: int, status: int | None, error: str | None, ok: bool
    ) -> None:
        now = datetime.now(UTC)
        wait = None if ok else self._policy.wait_before(attempts + 1)
        if ok:
            state, next_at = DELIVERED, None
        elif wait is None:
            state, next_at = GAVE_UP, None
        else:
            state, next_at = PENDING, now + timedelta(seconds=wait)
        with self._engine.begin() as connection:
            connection.execute(
                insert(DeliveryAttempt).values(
                    delivery_id=delivery_id, attempted_at=now, status_code=status, error=error
                )
            )
            connection.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.delivery_id == delivery_id)
                .values(
                    state=state,
                    attempts=attempts + 1,
                    next_attempt_at=next_at,
                    delivered_at=now if ok else None,
                )
            )
        if state == GAVE_UP:
            log.error("webhook delivery %d gave up after %d attempts", delivery_id, attempts + 1)


def claim_for_redelivery(engine: Engine, delivery_id: int, hold_seconds: float = 60.0) -> bool:
    """Take a delivery, whatever its state, for an attempt made now by the caller
    (``billing events redeliver``): pending, and not due for the relays for ``hold_seconds``.
    False if there is no such delivery. Its attempts so far count towards its schedule: a
    delivery redelivered after it gave up is tried once, then gives up again if that fails."""
    statement = (
        update(WebhookDelivery)
        .where(WebhookDelivery.delivery_id == delivery_id)
        .values(state=PENDING, next_attempt_at=datetime.now(UTC) + timedelta(seconds=hold_seconds))
    )
    with engine.begin() as connection:
        return connection.execute(statement).rowcount == 1
