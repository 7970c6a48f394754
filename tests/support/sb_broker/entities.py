"""Topics, subscriptions and the peek-lock life of a message, with no AMQP in sight.

Service Bus semantics kept here (and tested through the real SDK):

* a topic copies each message to every subscription whose correlation filters match its
  application properties (all pairs of one filter equal, string values; an empty filter
  takes all); a subscription with several filters (several rules) takes a message once
  if any of them matches;
* a receiver *acquires* a message: it is locked for ``lock_duration`` seconds under a
  fresh lock token and invisible to other receivers;
* complete deletes it; abandon and lock expiry count a failed delivery and make it
  available again, or move it to the dead-letter sub-queue once ``max_delivery_count``
  deliveries failed; release (the SDK's "I never handed this to the application") makes it
  available without counting; dead-letter moves it with the reason given;
* settling or renewing a lock that expired or was settled raises :class:`LockLostError`.

Nothing here is thread-safe: the broker holds :attr:`Namespace.lock` around every use.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.sb_broker.addresses import EntityPath
from tests.support.sb_broker.codec import ParsedMessage

DEFAULT_LOCK_DURATION = 60.0
DEFAULT_MAX_DELIVERY_COUNT = 10
MAX_DELIVERY_COUNT_EXCEEDED = "MaxDeliveryCountExceeded"


class LockLostError(LookupError):
    """A settlement or renewal names a lock that expired, was settled, or never existed."""


@dataclass(eq=False)
class QueuedMessage:
    """One subscription's copy of a message."""

    message: ParsedMessage
    sequence_number: int
    enqueued_at: float
    #: failed deliveries so far: the AMQP header's delivery-count, 0 on the first delivery
    delivery_count: int = 0
    lock_token: uuid.UUID | None = None
    locked_until: float = 0.0
    #: application properties the broker adds (the dead-letter reason and description)
    extra_properties: dict[str, str] = field(default_factory=dict)


class MessageQueue:
    """The messages of one subscription, or of its dead-letter sub-queue, and their locks."""

    def __init__(
        self,
        path: EntityPath,
        *,
        lock_duration: float,
        max_delivery_count: int,
        dead_letter: MessageQueue | None,
    ) -> None:
        self.path = path
        self.lock_duration = lock_duration
        self.max_delivery_count = max_delivery_count
        self.dead_letter_queue = dead_letter
        self._available: list[tuple[int, int, QueuedMessage]] = []
        self._tie_breaker = itertools.count()
        self._locked: dict[uuid.UUID, QueuedMessage] = {}

    def enqueue(self, message: QueuedMessage) -> None:
        entry = (message.sequence_number, next(self._tie_breaker), message)
        heapq.heappush(self._available, entry)

    @property
    def has_available(self) -> bool:
        return bool(self._available)

    def acquire(self, now: float) -> QueuedMessage | None:
        """Lock the oldest available message, or return ``None`` if there is none."""
        if not self._available:
            return None
        _, _, message = heapq.heappop(self._available)
        message.lock_token = uuid.uuid4()
        message.locked_until = now + self.lock_duration
        self._locked[message.lock_token] = message
        return message

    def _unlock(self, token: uuid.UUID) -> QueuedMessage:
        message = self._locked.pop(token, None)
        if message is None:
            raise LockLostError(f"{self.path}: lock {token} expired, was settled, or never existed")
        message.lock_token = None
        return message

    def complete(self, token: uuid.UUID) -> None:
        self._unlock(token)

    def abandon(self, token: uuid.UUID, *, counted: bool = True) -> None:
        self._return(self._unlock(token), counted=counted)

    def release(self, token: uuid.UUID) -> None:
        self.abandon(token, counted=False)

    def dead_letter(self, token: uuid.UUID, reason: str, description: str) -> None:
        self._move_to_dead_letter(self._unlock(token), reason, description)

    def renew(self, token: uuid.UUID, now: float) -> float:
        message = self._locked.get(token)
        if message is None or message.locked_until <= now:
            raise LockLostError(f"{self.path}: lock {token} expired, was settled, or never existed")
        message.locked_until = now + self.lock_duration
        return message.locked_until

    def expire_locks(self, now: float) -> bool:
        """Return expired messages as failed deliveries; tell whether any expired."""
        expired = [t for t, m in self._locked.items() if m.locked_until <= now]
        for token in expired:
            self._return(self._unlock(token), counted=True)
        return bool(expired)

    def _return(self, message: QueuedMessage, *, counted: bool) -> None:
        if counted:
            message.delivery_count += 1
        if counted and self.dead_letter_queue and message.delivery_count >= self.max_delivery_count:
            description = (
                f"Message could not be consumed after {self.max_delivery_count} delivery attempts."
            )
            self._move_to_dead_letter(message, MAX_DELIVERY_COUNT_EXCEEDED, description)
        else:
            self.enqueue(message)

    def _move_to_dead_letter(self, message: QueuedMessage, reason: str, description: str) -> None:
        if self.dead_letter_queue is None:  # dead-lettering from the dead-letter queue: drop
            return
        message.extra_properties.update(
            {"DeadLetterReason": reason, "DeadLetterErrorDescription": description}
        )
        self.dead_letter_queue.enqueue(message)

    def messages(self) -> list[QueuedMessage]:
        """Every message, available or locked, oldest first (for test assertions)."""
        every = [m for _, _, m in self._available] + list(self._locked.values())
        return sorted(every, key=lambda m: m.sequence_number)


@dataclass
class Subscription:
    name: str
    #: its rules' correlation filters, any of which selects a message
    filters: list[dict[str, str]]
    queue: MessageQueue

    def accepts(self, properties: Mapping[str, Any]) -> bool:
        return any(
            all(properties.get(key) == value for key, value in rule.items())
            for rule in self.filters
        )


class Topic:
    def __init__(self, name: str) -> None:
        self.name = name
        self.subscriptions: dict[str, Subscription] = {}
        self._next_sequence = 1

    def publish(self, message: ParsedMessage, now: float) -> list[MessageQueue]:
        """Copy ``message`` to every matching subscription; return the queues that got it."""
        sequence_number, self._next_sequence = self._next_sequence, self._next_sequence + 1
        receiving = [
            s.queue
            for s in self.subscriptions.values()
            if s.accepts(message.application_properties)
        ]
        for queue in receiving:
            queue.enqueue(QueuedMessage(message, sequence_number, now))
        return receiving


def filter_from_name(name: str) -> dict[str, str]:
    """The auto-create naming convention: ``label@Key=Value&Key2=Value2`` → those pairs.

    A name without ``@`` gives an empty filter (every message). ``@``, ``=`` and ``&`` are
    not valid in real subscription names, so such a name can only ever mean this broker.
    """
    _, _, pairs = name.partition("@")
    return dict(pair.split("=", 1) for pair in pairs.split("&") if "=" in pair)


class Namespace:
    """Every topic and subscription, found by case-insensitive name."""

    def __init__(self, *, auto_create_subscriptions: bool = False) -> None:
        self.lock = threading.RLock()
        self.auto_create_subscriptions = auto_create_subscriptions
        self._topics: dict[str, Topic] = {}

    def add_topic(self, name: str) -> Topic:
        return self._topics.setdefault(name.lower(), Topic(name))

    def add_subscription(
        self,
        topic: str,
        name: str,
        filter: Mapping[str, str] | None = None,
        *,
        filters: Sequence[Mapping[str, str]] = (),
        max_delivery_count: int = DEFAULT_MAX_DELIVERY_COUNT,
        lock_duration: float = DEFAULT_LOCK_DURATION,
    ) -> Subscription:
        """``filter``: one rule; ``filters``: several, any of which selects a message."""
        owner = self.topic(topic)
        if owner is None:
            raise KeyError(f"no topic {topic!r}: add_topic() it first")
        if filter and filters:
            raise ValueError(f"subscription {name!r}: give filter or filters, not both")
        rules = [dict(rule) for rule in filters] or [dict(filter or {})]
        if existing := owner.subscriptions.get(name.lower()):
            if existing.filters != rules:
                raise ValueError(f"subscription {name!r} exists with filters {existing.filters}")
            return existing
        path = EntityPath(owner.name, name)
        dead_letter = MessageQueue(
            EntityPath(owner.name, name, dead_letter=True),
            lock_duration=lock_duration,
            max_delivery_count=max_delivery_count,
            dead_letter=None,
        )
        queue = MessageQueue(
            path,
            lock_duration=lock_duration,
            max_delivery_count=max_delivery_count,
            dead_letter=dead_letter,
        )
        subscription = Subscription(name, rules, queue)
        owner.subscriptions[name.lower()] = subscription
        return subscription

    def topic(self, name: str) -> Topic | None:
        return self._topics.get(name.lower())

    def find_queue(self, path: EntityPath) -> MessageQueue | None:
        """The queue a receiver's source names (auto-creating the subscription if allowed)."""
        topic = self.topic(path.topic)
        if topic is None or path.subscription is None:
            return None
        subscription = topic.subscriptions.get(path.subscription.lower())
        if subscription is None and self.auto_create_subscriptions:
            subscription = self.add_subscription(
                topic.name, path.subscription, filter_from_name(path.subscription)
            )
        if subscription is None:
            return None
        return subscription.queue.dead_letter_queue if path.dead_letter else subscription.queue

    def queues(self) -> Iterator[MessageQueue]:
        for topic in self._topics.values():
            for subscription in topic.subscriptions.values():
                yield subscription.queue
                if subscription.queue.dead_letter_queue is not None:
                    yield subscription.queue.dead_letter_queue

    def expire_locks(self, now: float) -> bool:
        expired = [queue.expire_locks(now) for queue in self.queues()]  # all, no short-circuit
        return any(expired)
