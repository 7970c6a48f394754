"""An Azure-Storage-style queue in SQLite: visibility timeouts, pop receipts, dequeue counts.

A message row is *visible* when ``visible_at <= now``. Receiving hides it by moving
``visible_at`` forward and gives it a fresh random pop receipt, in one ``UPDATE ...
RETURNING`` statement, so two processes can never take the same visible message. Deleting
or updating needs the current receipt: once anyone received the message again, or its
visibility was updated, the old receipt is stale and the call fails with
``ResourceNotFoundError``, as in Azure. A receipt stays valid after the timeout ran out as
long as nobody received the message again (Azure behaves the same way).
"""

from __future__ import annotations

import math
import sqlite3
import uuid

from azure.core.exceptions import ResourceNotFoundError

from shared import meter
from shared.storage.embedded.db import Database, now
from shared.storage.embedded.names import bad_request, utc_from_timestamp, validate_queue_name
from shared.storage.ports import (
    MAX_MESSAGES_PER_RECEIVE,
    QueueMessage,
)
from shared.storage.queue_rules import check_batch_size, check_message

SCHEMA = """
CREATE TABLE IF NOT EXISTS queues (name TEXT PRIMARY KEY, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    queue TEXT NOT NULL,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    pop_receipt TEXT,
    dequeue_count INTEGER NOT NULL DEFAULT 0,
    inserted_at REAL NOT NULL,
    visible_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_visibility ON messages (queue, visible_at, seq);
"""

#: Messages never expire: the Azure backend sends ``time_to_live=-1`` too, because a work
#: item that silently expired after Azure's default 7 days would break "nothing accepted
#: is lost". (The ``expires_at`` column stays for a future time-to-live option.)
MESSAGE_TTL_SECONDS = math.inf
#: Azure's longest visibility timeout.
MAX_VISIBILITY_TIMEOUT_SECONDS = 7 * 24 * 3600

# A fresh pop receipt for every row a statement touches, made by SQLite itself.
_NEW_RECEIPT = "lower(hex(randomblob(12)))"
_RETURNED = "id, pop_receipt, content, dequeue_count, inserted_at, visible_at"


class EmbeddedQueue:
    """One queue of an :class:`~shared.storage.embedded.EmbeddedStorageAccount`."""

    def __init__(self, db: Database, name: str) -> None:
        self._db = db
        self._name = validate_queue_name(name)

    @property
    def name(self) -> str:
        return self._name

    def create(self) -> None:
        meter.record("queue", "admin")
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO queues (name, created_at) VALUES (?, ?)",
                (self._name, now()),
            )
            # Expired messages are invisible anyway; creation (once per role start) is a
            # cheap moment to reclaim their space.
            conn.execute(
                "DELETE FROM messages WHERE queue = ? AND expires_at <= ?", (self._name, now())
            )

    def delete_queue(self) -> None:
        """Delete the queue and its messages; a queue already gone is not an error."""
        meter.record("queue", "admin")
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM messages WHERE queue = ?", (self._name,))
            conn.execute("DELETE FROM queues WHERE name = ?", (self._name,))

    def send(self, content: str, *, visibility_timeout: int = 0) -> None:
        # The same rules, in the same place, as the Azure backend: refused before any
        # request, so not metered.
        check_message(content)
        meter.record("queue", "put")
        _check_timeout("visibility_timeout", visibility_timeout, minimum=0)
        t = now()
        cursor = self._db.connection().execute(
            "INSERT INTO messages (queue, id, content, inserted_at, visible_at, expires_at) "
            "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM queues WHERE name = ?)",
            (
                self._name,
                str(uuid.uuid4()),
                content,
                t,
                t + visibility_timeout,
                t + MESSAGE_TTL_SECONDS,
                self._name,
            ),
        )
        if cursor.rowcount == 0:
            raise self._not_found()

    def receive(
        self, max_messages: int = MAX_MESSAGES_PER_RECEIVE, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        check_batch_size(max_messages)
        meter.record("queue", "get")
        _check_timeout("visibility_timeout", visibility_timeout, minimum=1)
        t = now()
        conn = self._db.connection()
        rows = conn.execute(
            f"UPDATE messages SET visible_at = ?, dequeue_count = dequeue_count + 1, "
            f"pop_receipt = {_NEW_RECEIPT} WHERE seq IN ("
            "  SELECT seq FROM messages WHERE queue = ? AND visible_at <= ? AND expires_at > ?"
            "  ORDER BY visible_at, seq LIMIT ?"
            f") RETURNING seq, {_RETURNED}",
            (t + visibility_timeout, self._name, t, t, max_messages),
        ).fetchall()
        if not rows:
            self._require_exists(conn)
        # RETURNING gives no order guarantee; hand them out in the order they were queued.
        rows.sort(key=lambda row: row[0])
        return [_message(row[1:]) for row in rows]

    def delete(self, message: QueueMessage) -> None:
        meter.record("queue", "delete")
        cursor = self._db.connection().execute(
            "DELETE FROM messages WHERE id = ? AND pop_receipt = ? AND queue = ?",
            (message.id, message.pop_receipt, self._name),
        )
        if cursor.rowcount == 0:
            raise self._message_not_found(message)

    def update_visibility(self, message: QueueMessage, visibility_timeout: int) -> QueueMessage:
        meter.record("queue", "update")
        _check_timeout("visibility_timeout", visibility_timeout, minimum=0)
        row = (
            self._db.connection()
            .execute(
                f"UPDATE messages SET visible_at = ?, pop_receipt = {_NEW_RECEIPT} "
                f"WHERE id = ? AND pop_receipt = ? AND queue = ? RETURNING {_RETURNED}",
                (now() + visibility_timeout, message.id, message.pop_receipt, self._name),
            )
            .fetchone()
        )
        if row is None:
            raise self._message_not_found(message)
        return _message(row)

    def peek(self, max_messages: int = MAX_MESSAGES_PER_RECEIVE) -> list[QueueMessage]:
        if not 1 <= max_messages <= MAX_MESSAGES_PER_RECEIVE:
            # The SDK's own check and wording.
            raise ValueError("Number of messages to peek should be between 1 and 32")
        meter.record("queue", "peek")
        t = now()
        conn = self._db.connection()
        rows = conn.execute(
            f"SELECT {_RETURNED} FROM messages WHERE queue = ? AND visible_at <= ? "
            "AND expires_at > ? ORDER BY visible_at, seq LIMIT ?",
            (self._name, t, t, max_messages),
        ).fetchall()
        if not rows:
            self._require_exists(conn)
        # Azure does not show a pop receipt on a peeked message.
        return [_message((i, "", c, n, ins, None)) for i, _, c, n, ins, _ in rows]

    def approximate_count(self) -> int:
        """Every unexpired message, visible or not (Azure's count includes hidden ones)."""
        meter.record("queue", "count")
        conn = self._db.connection()
        self._require_exists(conn)
        (count,) = conn.execute(
            "SELECT count(*) FROM messages WHERE queue = ? AND expires_at > ?",
            (self._name, now()),
        ).fetchone()
        return int(count)

    def clear(self) -> None:
        """Delete every message, hidden ones included."""
        meter.record("queue", "clear")
        with self._db.transaction() as conn:
            self._require_exists(conn)
            conn.execute("DELETE FROM messages WHERE queue = ?", (self._name,))

    def _require_exists(self, conn: sqlite3.Connection) -> None:
        if conn.execute("SELECT 1 FROM queues WHERE name = ?", (self._name,)).fetchone() is None:
            raise self._not_found()

    def _not_found(self) -> ResourceNotFoundError:
        return ResourceNotFoundError(f"QueueNotFound: the queue {self._name!r} does not exist")

    def _message_not_found(self, message: QueueMessage) -> ResourceNotFoundError:
        return ResourceNotFoundError(
            f"MessageNotFound: message {message.id} of queue {self._name!r} does not exist, "
            "or its pop receipt is stale (it was received or updated again since)"
        )


def _message(row: tuple[str, str, str, int, float, float | None]) -> QueueMessage:
    msg_id, receipt, content, dequeue_count, inserted_at, visible_at = row
    return QueueMessage(
        id=msg_id,
        pop_receipt=receipt,
        content=content,
        dequeue_count=dequeue_count,
        inserted_on=utc_from_timestamp(inserted_at),
        next_visible_on=None if visible_at is None else utc_from_timestamp(visible_at),
    )


def _check_timeout(name: str, seconds: int, *, minimum: int) -> None:
    """Azure's range for visibility timeouts: a 400 ``OutOfRangeQueryParameterValue``."""
    if not minimum <= seconds <= MAX_VISIBILITY_TIMEOUT_SECONDS:
        raise bad_request(
            "OutOfRangeQueryParameterValue",
            f"{name}={seconds} is outside {minimum}..{MAX_VISIBILITY_TIMEOUT_SECONDS} seconds",
        )
