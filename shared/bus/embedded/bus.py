"""The embedded trigger bus: a topic with filtered subscriptions in one local folder.

Layout of the folder::

    bus.sqlite     topics, subscriptions (with their filters) and undelivered copies
    doorbells/     one FIFO per subscription, to wake blocked receivers (see doorbell.py)

Publishing copies the message to every subscription that one of its correlation filters
matches (all of that filter's pairs equal the message's properties), once, in one
transaction, then rings each of those subscriptions' doorbells. Subscriptions persist in
the folder, as Service Bus subscriptions persist in the namespace, until auto-delete-on-idle
removes them.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Mapping
from pathlib import Path

from azure.core.exceptions import ResourceNotFoundError

from shared import meter
from shared.bus.embedded.doorbell import doorbell_path, ring
from shared.bus.embedded.subscription import EmbeddedSubscription
from shared.bus.ports import SubscriptionSpec
from shared.storage.embedded.db import Database, now

SCHEMA = """
CREATE TABLE IF NOT EXISTS topics (name TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS subscriptions (
    topic TEXT NOT NULL,
    name TEXT NOT NULL,
    filter TEXT NOT NULL, -- JSON: the list of correlation filters (SubscriptionSpec.rules)
    idle_seconds REAL,
    last_active REAL NOT NULL,
    PRIMARY KEY (topic, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY,
    topic TEXT NOT NULL,
    subscription TEXT NOT NULL,
    message_id TEXT NOT NULL,
    body BLOB NOT NULL,
    properties TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_by_subscription ON deliveries (topic, subscription, seq);
"""

#: Service Bus Standard's largest message.
MAX_MESSAGE_BYTES = 256 * 1024
# Service Bus entity names: topics may hold slashes, subscriptions at most 50 characters.
_TOPIC = re.compile(r"^[A-Za-z0-9](?:[\w./-]{0,258}[A-Za-z0-9])?$", re.ASCII)
_SUBSCRIPTION = re.compile(r"^[A-Za-z0-9](?:[\w.-]{0,48}[A-Za-z0-9])?$", re.ASCII)


class EmbeddedTriggerBus:
    """One topic of the bus kept under ``root``; safe across processes."""

    def __init__(self, root: Path, topic: str) -> None:
        if not _TOPIC.match(topic):
            raise ValueError(f"invalid topic name {topic!r}")
        self.root = Path(root)
        self._topic = topic
        self._db = Database(self.root / "bus.sqlite", SCHEMA)
        self._doorbells = self.root / "doorbells"
        self._opened: list[EmbeddedSubscription] = []

    @property
    def topic(self) -> str:
        return self._topic

    def ensure_topic(self) -> None:
        self._db.connection().execute("INSERT OR IGNORE INTO topics VALUES (?)", (self._topic,))

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None:
        if len(body) > MAX_MESSAGE_BYTES:
            raise ValueError(f"bus message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
            raise TypeError("bus message properties must map str to str")
        meter.record("bus", "send")
        props = dict(properties)
        with self._db.transaction() as conn:
            self._require_topic(conn)
            gone = [
                name
                for (name,) in conn.execute(
                    "DELETE FROM subscriptions WHERE topic = ? AND idle_seconds IS NOT NULL "
                    "AND last_active + idle_seconds < ? RETURNING name",
                    (self._topic, now()),
                ).fetchall()
            ]
            conn.executemany(
                "DELETE FROM deliveries WHERE topic = ? AND subscription = ?",
                [(self._topic, name) for name in gone],
            )
            matching = [
                name
                for name, filter_json in conn.execute(
                    "SELECT name, filter FROM subscriptions WHERE topic = ?", (self._topic,)
                ).fetchall()
                if _stored_spec(name, filter_json).matches(props)
            ]
            message_id, props_json = uuid.uuid4().hex, json.dumps(props)
            conn.executemany(
                "INSERT INTO deliveries (topic, subscription, message_id, body, properties) "
                "VALUES (?, ?, ?, ?, ?)",
                [(self._topic, name, message_id, body, props_json) for name in matching],
            )
        for name in gone:
            self._doorbell(name).unlink(missing_ok=True)
        for name in matching:
            ring(self._doorbell(name))

    def subscribe(self, spec: SubscriptionSpec) -> EmbeddedSubscription:
        """Create the subscription, or open it and set its filters and idle limit to ``spec``."""
        if not _SUBSCRIPTION.match(spec.name):
            raise ValueError(f"invalid subscription name {spec.name!r}")
        with self._db.transaction() as conn:
            self._require_topic(conn)
            conn.execute(
                "INSERT INTO subscriptions VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                "filter = excluded.filter, idle_seconds = excluded.idle_seconds, "
                "last_active = excluded.last_active",
                (
                    self._topic,
                    spec.name,
                    json.dumps([dict(rule) for rule in spec.rules]),
                    spec.auto_delete_idle_seconds,
                    now(),
                ),
            )
        subscription = EmbeddedSubscription(self._db, self._topic, spec, self._doorbell(spec.name))
        self._opened.append(subscription)
        return subscription

    def subscription_names(self) -> list[str]:
        """The topic's subscriptions, sorted (to check what exists, e.g. in tests)."""
        rows = (
            self._db.connection()
            .execute("SELECT name FROM subscriptions WHERE topic = ? ORDER BY name", (self._topic,))
            .fetchall()
        )
        return [name for (name,) in rows]

    def close(self) -> None:
        for subscription in self._opened:
            subscription.close()
        self._opened.clear()
        self._db.close()

    def _doorbell(self, subscription: str) -> Path:
        return doorbell_path(self._doorbells, self._topic, subscription)

    def _require_topic(self, conn: sqlite3.Connection) -> None:
        found = conn.execute("SELECT 1 FROM topics WHERE name = ?", (self._topic,)).fetchone()
        if found is None:
            raise ResourceNotFoundError(
                f"topic {self._topic!r} does not exist: call ensure_topic() first"
            )


def _stored_spec(name: str, filter_json: str) -> SubscriptionSpec:
    """A subscription as stored: its name and its JSON list of rules."""
    return SubscriptionSpec(name, rules=tuple(json.loads(filter_json)))
