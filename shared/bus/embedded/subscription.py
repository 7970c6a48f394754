"""The receiving end of an embedded subscription: blocking receive across processes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from azure.core.exceptions import ResourceNotFoundError

from shared import meter
from shared.bus.embedded.doorbell import Doorbell
from shared.bus.ports import BusMessage, SubscriptionSpec
from shared.storage.embedded.db import Database, now


class EmbeddedSubscription:
    """Messages copied to one subscription by publishers, taken (and settled) on receive.

    Several receivers may share one subscription (in one process or many): each message
    goes to exactly one of them, since taking is a single ``DELETE ... RETURNING``.
    """

    def __init__(self, db: Database, topic: str, spec: SubscriptionSpec, doorbell: Path) -> None:
        self._db = db
        self._topic = topic
        self._name = spec.name
        # Opened before the first look at the database, so no ring can be missed.
        self._doorbell = Doorbell(doorbell)
        # A receiver blocked in receive() still counts as alive: it touches the
        # subscription often enough that auto-delete-on-idle never takes it.
        self._poll_interval = self._doorbell.poll_interval
        if spec.auto_delete_idle_seconds is not None:
            self._poll_interval = min(self._poll_interval, spec.auto_delete_idle_seconds / 3)
        # Receives in progress and whether this end is closed: close() wakes them through
        # the doorbell and releases it only once the last one has left.
        self._changed = threading.Condition()
        self._receiving = 0
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        """Up to ``max_messages``, waiting up to ``timeout`` seconds for the first one.

        Returns ``[]`` at the timeout or once :meth:`close` is called meanwhile.
        ``ResourceNotFoundError`` if the subscription no longer exists (auto-deleted after
        its receivers were gone longer than its idle limit), as Service Bus would say;
        ``RuntimeError`` if this end was closed before.
        """
        if max_messages < 1:
            raise ValueError(f"max_messages must be at least 1, not {max_messages}")
        with self._changed:
            if self._closed:
                raise RuntimeError(f"subscription {self._name!r}: this receiving end is closed")
            self._receiving += 1
        try:
            meter.record("bus", "receive")
            deadline = time.monotonic() + max(timeout, 0.0)
            while not self._closed:
                messages = self._take(max_messages)
                if messages:
                    return messages
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._doorbell.wait(min(remaining, self._poll_interval))
            return []
        finally:
            with self._changed:
                self._receiving -= 1
                self._changed.notify_all()

    def close(self) -> None:
        """Stop receiving here, waking a receive blocked in another thread; the subscription
        itself stays (as in Service Bus). Closing again does nothing."""
        with self._changed:
            if self._closed:
                return
            self._closed = True
            self._doorbell.wake()
            # A woken receive leaves within one database look; then nobody uses the bell.
            self._changed.wait_for(lambda: self._receiving == 0)
            self._doorbell.close()

    def _take(self, max_messages: int) -> list[BusMessage]:
        with self._db.transaction() as conn:
            alive = conn.execute(
                "UPDATE subscriptions SET last_active = ? WHERE topic = ? AND name = ?",
                (now(), self._topic, self._name),
            )
            if alive.rowcount == 0:
                raise ResourceNotFoundError(
                    f"subscription {self._name!r} of topic {self._topic!r} does not exist "
                    "(deleted after being idle longer than its auto_delete_idle_seconds?)"
                )
            rows = conn.execute(
                "DELETE FROM deliveries WHERE seq IN ("
                "  SELECT seq FROM deliveries WHERE topic = ? AND subscription = ?"
                "  ORDER BY seq LIMIT ?"
                ") RETURNING seq, message_id, body, properties",
                (self._topic, self._name, max_messages),
            ).fetchall()
        rows.sort(key=lambda row: row[0])
        return [
            BusMessage(body=body, properties=json.loads(props), message_id=msg_id, delivery_count=1)
            for _, msg_id, body, props in rows
        ]
