"""The relay: publishes the outbox's pending events, then runs the webhook deliveries.

A thread of each controller process. Each round it reads the events not yet published
(``published_at IS NULL``, an index), publishes each to the ``batch-events`` topic, and
only when the bus has taken it marks it published — in the same transaction queueing its
webhook deliveries (to ``BILLING_WEBHOOK_URLS`` and the batch's own ``callback``, which the
event's row holds for an abandoned batch, the ``batches`` row for the others). Then it
makes the webhook attempts that are due (:mod:`.webhooks`).

At least once: a relay that dies between the publish and the mark publishes the event
again when it (or another controller) restarts, with the same id, which receivers
de-duplicate on. Two relays may publish the same pending event at the same moment; only
one of them marks it, so its webhook deliveries are queued once.

Next step (docs/walkthrough.md): nothing: the batch is done. ``GET /batches/{id}``
(``initiator.routes.batches``) reads its record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import Engine, select, update

from controller.events.webhooks import WebhookSender, add_deliveries
from shared.bus import open_bus
from shared.bus.ports import TriggerBus
from shared.contracts.batch_event import CONTENT_TYPE
from shared.settings import Settings
from shared.warehouse.models import Batch, OutboxEvent

log = logging.getLogger(__name__)

#: Pending events taken per round.
_BATCH = 32
#: The longest wait between rounds while they fail.
_MAX_WAIT_SECONDS = 60.0


class EventRelay:
    """Publishes pending batch events and delivers webhooks, on a thread of its own."""

    def __init__(
        self,
        engine: Engine,
        bus: TriggerBus,
        *,
        webhooks: WebhookSender | None = None,
        webhook_urls: Sequence[str] = (),
        poll_seconds: float = 1.0,
        close_bus: bool = False,
        ensure_topic: bool = False,
    ) -> None:
        """``ensure_topic``: create the topic before the first publish (in the relay's own
        rounds, so that a bus unreachable at start delays events, never the controller)."""
        self._engine = engine
        self._topic_pending = ensure_topic
        self._bus = bus
        self._webhooks = webhooks
        self._urls = tuple(webhook_urls)
        self._poll = poll_seconds
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._close_bus = close_bus
        self.published = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="event-relay", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._webhooks is not None:
            self._webhooks.close()
        if self._close_bus:
            self._bus.close()

    def _run(self) -> None:
        wait = self._poll
        while not self._stopping.is_set():
            try:
                self.run_once()
                wait = self._poll
            except Exception:
                # The warehouse or the bus is away: the events wait in the outbox, and the
                # relay looks again less and less often (up to a minute), logging each time.
                wait = min(max(wait, self._poll) * 2, _MAX_WAIT_SECONDS)
                log.warning("event relay round failed; retried in %.1f s", wait, exc_info=True)
            self._stopping.wait(wait)

    def run_once(self) -> int:
        """One round: publish what is pending, make the webhook attempts due; events published.

        The webhooks of events already published are attempted even while the bus refuses
        new ones; either failure is raised once both were tried."""
        try:
            if self._topic_pending:
                self._bus.ensure_topic()
                self._topic_pending = False
            published = self.publish_pending()
        finally:
            if self._webhooks is not None:
                self._webhooks.deliver_due()
        return published

    def publish_pending(self) -> int:
        query = (
            select(OutboxEvent.event_id, OutboxEvent.batch_id, OutboxEvent.type, OutboxEvent.body)
            .where(OutboxEvent.published_at.is_(None))
            .order_by(OutboxEvent.created_at)
            .limit(_BATCH)
        )
        with self._engine.connect() as connection:
            pending = connection.execute(query).all()
        for event_id, batch_id, event_type, body in pending:
            self._publish(event_id, batch_id, event_type, body)
            self._mark_published(event_id, batch_id)
        return len(pending)

    def _publish(self, event_id: str, batch_id: str, event_type: str, body: str) -> None:
        # Application properties, so that a Service Bus subscription can filter by type.
        properties = {
            "type": event_type,
            "subject": batch_id,
            "id": event_id,
            "content-type": CONTENT_TYPE,
        }
        self._bus.publish(body.encode(), properties)

    def _mark_published(self, event_id: str, batch_id: str) -> None:
        with self._engine.begin() as connection:
            marked = connection.execute(
                update(OutboxEvent)
                .where(OutboxEvent.event_id == event_id, OutboxEvent.published_at.is_(None))
                .values(published_at=datetime.now(UTC))
            )
            if marked.rowcount != 1:
                return  # another relay marked it (and queued its deliveries)
            self.published += 1
            if self._webhooks is None:
                return
            # The event's own callback (an abandoned batch has no row), else the row's.
            callback = connection.scalar(
                select(OutboxEvent.callback).where(OutboxEvent.event_id == event_id)
            ) or connection.scalar(select(Batch.callback).where(Batch.batch_id == batch_id))
            add_deliveries(connection, event_id, [*self._urls, *([callback] if callback else [])])
        log.info("batch event %s of %s published", event_id, batch_id)


def start_relay(settings: Settings, engine: Engine, bus: TriggerBus | None = None) -> EventRelay:
    """A started relay on the ``batch-events`` topic (``bus``, or one opened from
    ``settings`` and closed with the relay), with webhooks if a secret is set."""
    own = bus is None
    if bus is None:
        bus = open_bus(settings, settings.events_topic)
    relay = EventRelay(
        engine,
        bus,
        webhooks=WebhookSender.from_settings(engine, settings),
        webhook_urls=settings.webhook_urls,
        poll_seconds=settings.events_relay_poll_seconds,
        close_bus=own,
        ensure_topic=own and settings.provision_resources,
    )
    relay.start()
    return relay
