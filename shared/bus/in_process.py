"""The in-process trigger bus: the topic as an in-memory subject, for all-in-one mode.

Scale-down to one process (docs/patterns.md): a small deployment that runs every role in one
process needs no trigger topic on a server — a plain in-memory subject tells the processor
that work arrived, while the queues still hold the truth (and workers elsewhere could still
pick it up).

Same semantics as the other backends of :mod:`shared.bus.ports`, minus durability:

* a subscription is a queue of its own with correlation filters (all pairs of one filter
  must match; any of several filters will do); publishing copies the message to every
  matching subscription, once each (fan-out);
* several receivers on one subscription compete: each copy is handed out once;
* ``receive`` blocks on the subscription's :class:`threading.Condition` until a copy
  arrives, the timeout passes or the receiving end is closed — no polling;
* ``auto_delete_idle_seconds`` drops a subscription nobody has received from for that long
  (and nobody is waiting on), so the copies of a gone instance do not pile up.

Nothing survives the process, which is fine for triggers: they are hints, and a processor
that starts looks at its queues anyway. Nothing is metered either: an in-memory publish
costs no request, which is the point of scaling down.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from azure.core.exceptions import ResourceNotFoundError

from shared.bus.ports import BusMessage, SubscriptionSpec

#: Service Bus Standard's largest message; kept so that code tested here fits there.
MAX_MESSAGE_BYTES = 256 * 1024


@dataclass
class _SubscriptionState:
    """One subscription's filter and undelivered copies; guarded by the bus's lock."""

    spec: SubscriptionSpec
    topic: str
    arrived: threading.Condition
    last_active: float
    pending: deque[BusMessage] = field(default_factory=deque)
    waiting: int = 0
    deleted: bool = False

    def idle_too_long(self, now: float) -> bool:
        limit = self.spec.auto_delete_idle_seconds
        return limit is not None and self.waiting == 0 and now - self.last_active > limit

    def take(self, max_messages: int, now: float) -> list[BusMessage]:
        if self.deleted:
            raise ResourceNotFoundError(
                f"subscription {self.spec.name!r} of topic {self.topic!r} does not exist "
                "(deleted after being idle longer than its auto_delete_idle_seconds?)"
            )
        self.last_active = now
        count = min(max_messages, len(self.pending))
        return [self.pending.popleft() for _ in range(count)]


class InProcessTriggerBus:
    """One topic held in memory; thread-safe, for publishers and receivers in one process."""

    def __init__(
        self, topic: str = "triggers", *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """``clock`` measures idleness for auto-delete (injectable for tests)."""
        self._topic = topic
        self._clock = clock
        self._lock = threading.Lock()
        self._topic_exists = False
        self._closed = False
        self._subscriptions: dict[str, _SubscriptionState] = {}
        # Receiving ends to close with the bus; one dropped by its owner needs no closing.
        self._opened: weakref.WeakSet[InProcessSubscription] = weakref.WeakSet()

    @property
    def topic(self) -> str:
        return self._topic

    def ensure_topic(self) -> None:
        with self._lock:
            self._require_open()
            self._topic_exists = True

    def publish(self, body: bytes, properties: Mapping[str, str]) -> None:
        """Copy the message to every matching subscription and wake their receivers."""
        if len(body) > MAX_MESSAGE_BYTES:
            raise ValueError(f"bus message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
            raise TypeError("bus message properties must map str to str")
        message_id = uuid.uuid4().hex
        with self._lock:
            self._require_topic()
            self._drop_idle_subscriptions()
            for state in self._subscriptions.values():
                if state.spec.matches(properties):
                    # Each copy has its own properties dict: no receiver can alter another's.
                    copy = BusMessage(bytes(body), dict(properties), message_id, delivery_count=1)
                    state.pending.append(copy)
                    state.arrived.notify_all()

    def subscribe(self, spec: SubscriptionSpec) -> InProcessSubscription:
        """Create the subscription, or open it with ``spec``'s filters and idle limit."""
        with self._lock:
            self._require_topic()
            now = self._clock()
            state = self._subscriptions.get(spec.name)
            if state is None:
                state = _SubscriptionState(spec, self._topic, threading.Condition(self._lock), now)
                self._subscriptions[spec.name] = state
            else:  # as on the other backends: subscribing again replaces filters and limit
                state.spec, state.last_active = spec, now
            subscription = InProcessSubscription(state, self._clock)
            self._opened.add(subscription)
            return subscription

    def subscription_names(self) -> list[str]:
        """The topic's subscriptions, sorted (to check what exists, e.g. in tests)."""
        with self._lock:
            return sorted(self._subscriptions)

    def close(self) -> None:
        """Close every receiving end (a blocked receive returns ``[]``) and forget all."""
        with self._lock:
            self._closed = True
            for subscription in list(self._opened):
                subscription.closed = True
            for state in self._subscriptions.values():
                state.arrived.notify_all()
            self._opened.clear()
            self._subscriptions.clear()

    # --- the caller holds self._lock -----------------------------------------------------
    def _drop_idle_subscriptions(self) -> None:
        now = self._clock()
        for name, state in list(self._subscriptions.items()):
            if state.idle_too_long(now):
                state.deleted = True
                state.pending.clear()
                del self._subscriptions[name]

    def _require_topic(self) -> None:
        self._require_open()
        if not self._topic_exists:
            raise ResourceNotFoundError(
                f"topic {self._topic!r} does not exist: call ensure_topic() first"
            )

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the in-process bus of topic {self._topic!r} is closed")


class InProcessSubscription:
    """A receiving end of one in-process subscription; messages are settled on receipt."""

    def __init__(self, state: _SubscriptionState, clock: Callable[[], float]) -> None:
        self._state = state
        self._clock = clock
        #: set by :meth:`close` or by the bus's close; guarded by the bus's lock
        self.closed = False

    @property
    def name(self) -> str:
        return self._state.spec.name

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        """Up to ``max_messages`` in publish order, waiting up to ``timeout`` s for the first.

        Returns ``[]`` at the timeout, or when this end is closed while waiting.
        ``ResourceNotFoundError`` if the subscription was auto-deleted; ``RuntimeError`` if
        this end was closed before (so a loop over a closed end fails instead of spinning).
        """
        if max_messages < 1:
            raise ValueError(f"max_messages must be at least 1, not {max_messages}")
        deadline = time.monotonic() + max(timeout, 0.0)
        state = self._state
        with state.arrived:
            if self.closed:
                raise RuntimeError(f"subscription {self.name!r}: this receiving end is closed")
            state.waiting += 1
            try:
                while not self.closed:
                    messages = state.take(max_messages, self._clock())
                    remaining = deadline - time.monotonic()
                    if messages or remaining <= 0:
                        return messages
                    state.arrived.wait(remaining)
                return []
            finally:
                state.waiting -= 1
                state.last_active = self._clock()

    def close(self) -> None:
        """Stop receiving here (a receive blocked in another thread returns ``[]`` at once);
        the subscription itself stays. Closing again does nothing."""
        with self._state.arrived:
            self.closed = True
            self._state.arrived.notify_all()
