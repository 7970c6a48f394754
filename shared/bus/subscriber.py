"""The push trigger, receiving side: long receives on the trigger topic, never dying.

The initiator publishes a :class:`~shared.contracts.messages.TriggerEvent` per accepted batch, with
the application property ``Priority``, and the release gate a
:class:`~shared.contracts.messages.GateEvent` with ``Kind=gate``. A processor turns them
into ``listener.on_work_detected()`` and ``gate.on_event(...)``.

**Cost of waiting.** Service Bus bills each receive call, however long it waited, so a
receive blocks for :data:`RECEIVE_SECONDS` (a minute): an idle instance makes 60 calls an
hour, not 3,600 per subscription. :meth:`TriggerSubscriber.stop` does not wait that long:
it closes the open subscriptions, which ends their blocked receives at once on every
backend (the port's contract).

**Never die.** A receive that fails (broker restart, network, an auto-deleted subscription)
is logged, the subscription is reopened after a randomized back-off, and ``on_reconnect``
runs, since triggers published meanwhile may have been missed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Annotated

from azure.core.exceptions import ResourceNotFoundError
from pydantic import Field, TypeAdapter, ValidationError

from shared.bus.ports import BusMessage, Subscription, SubscriptionSpec, TriggerBus
from shared.contracts.messages import GateEvent, TriggerEvent
from shared.listener.backoff import Backoff

log = logging.getLogger(__name__)

#: How long one receive blocks. Billed per call on Service Bus, so long; a stop closes the
#: subscription instead of waiting for it. Well under Service Bus's smallest auto-delete-on-idle
#: (5 minutes), so a live receiver keeps an auto-deleting subscription alive.
RECEIVE_SECONDS = 60.0
#: One message per receive: any trigger means "look at the queues", so one is enough, and
#: the Service Bus SDK returns a one-message receive at once, whereas asking for a batch it
#: keeps waiting to fill it (measured on the test broker: ~0.66 s against ~3 ms).
RECEIVE_MAX_MESSAGES = 1
#: How long a role's start waits for its subscriptions to open
#: (:meth:`TriggerSubscriber.wait_ready`): a trigger published before then is not heard.
READY_WAIT_SECONDS = 10.0
#: Reconnect back-off: about 1 s after the first failure, growing to 30 s.
RECONNECT_BACKOFF = Backoff(min_idle=0.5, delta=0.5, max_idle=30.0)

_EVENT = TypeAdapter(Annotated[TriggerEvent | GateEvent, Field(discriminator="kind")])


class TriggerSubscriber:
    """Receives trigger and gate events on ``specs``, one thread per subscription (a single
    one for a processor with its own subscription)."""

    def __init__(
        self,
        bus: TriggerBus,
        specs: Sequence[SubscriptionSpec],
        *,
        on_work: Callable[[TriggerEvent], object],
        on_gate: Callable[[GateEvent], object],
        on_reconnect: Callable[[], object] = lambda: None,
        receive_seconds: float = RECEIVE_SECONDS,
        backoff: Backoff = RECONNECT_BACKOFF,
        name: str = "trigger",
    ) -> None:
        self._bus = bus
        self._specs = list(specs)
        self._on_work = on_work
        self._on_gate = on_gate
        self._on_reconnect = on_reconnect
        self._receive_seconds = receive_seconds
        self._backoff = backoff
        self._stopping = threading.Event()
        # the subscriptions open now, by name: stop() closes them to end their receives
        self._open: dict[str, Subscription] = {}
        self._changed = threading.Condition()
        self._threads = [
            threading.Thread(
                target=self._run, args=(spec,), name=f"{name}-{spec.name}", daemon=True
            )
            for spec in self._specs
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def wait_ready(self, timeout: float) -> bool:
        """Block until every subscription is open (or ``timeout``); True if they all are.

        An event published before a subscription exists never reaches it, so a worker
        waits for this before it reads the durable gate flag.
        """
        with self._changed:
            return self._changed.wait_for(lambda: len(self._open) == len(self._specs), timeout)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop receiving; True if every thread ended within ``timeout``.

        Closing the open subscriptions ends their blocked receives at once, so this takes
        milliseconds, not the :data:`RECEIVE_SECONDS` a receive may block.
        """
        with self._changed:
            self._stopping.set()
            opened = list(self._open.values())
        for subscription in opened:
            with contextlib.suppress(Exception):  # the thread closes it again anyway
                subscription.close()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)

    # --- one subscription's thread -------------------------------------------------------
    def _run(self, spec: SubscriptionSpec) -> None:
        failures = 0  # in a row, without one good receive in between: grows the back-off
        while not self._stopping.is_set():
            subscription = self._open_subscription(spec)
            if subscription is None:
                failures += 1
            else:
                if failures:
                    log.info("trigger subscription %s reopened", spec.name)
                    self._safely(self._on_reconnect, "reconnect hook")
                try:
                    received = self._receive_until_error(subscription)
                finally:
                    self._forget(spec.name)
                    with contextlib.suppress(Exception):
                        subscription.close()
                failures = 1 if received else failures + 1
            if not self._stopping.is_set():
                self._stopping.wait(self._backoff.delay(failures))

    def _open_subscription(self, spec: SubscriptionSpec) -> Subscription | None:
        try:
            subscription = self._bus.subscribe(spec)
        except Exception:
            log.warning("cannot open trigger subscription %s; will retry", spec.name, exc_info=True)
            return None
        with self._changed:
            if not self._stopping.is_set():  # else stop() has closed the others already
                self._open[spec.name] = subscription
                self._changed.notify_all()
                return subscription
        with contextlib.suppress(Exception):
            subscription.close()
        return None

    def _receive_until_error(self, subscription: Subscription) -> bool:
        """Receive and dispatch until stopped or a receive fails; True if any receive worked."""
        received = False
        while not self._stopping.is_set():
            try:
                messages = subscription.receive(self._receive_seconds, RECEIVE_MAX_MESSAGES)
            except ResourceNotFoundError:
                log.warning("trigger subscription %s is gone; recreating it", subscription.name)
                return received
            except Exception:
                if not self._stopping.is_set():  # else: closed by stop(), as it should be
                    log.warning("receiving on %s failed", subscription.name, exc_info=True)
                return received
            received = True
            for message in messages:
                self._dispatch(message, subscription.name)
        return received

    def _dispatch(self, message: BusMessage, subscription: str) -> None:
        try:
            event = _EVENT.validate_json(message.body)
        except ValidationError as error:
            log.warning("ignoring an unknown message on %s: %s", subscription, error)
            return
        if isinstance(event, GateEvent):
            self._safely(lambda: self._on_gate(event), "gate handler")
        else:
            self._safely(lambda: self._on_work(event), "trigger handler")

    def _forget(self, name: str) -> None:
        with self._changed:
            self._open.pop(name, None)
            self._changed.notify_all()

    @staticmethod
    def _safely(callback: Callable[[], object], what: str) -> None:
        try:
            callback()
        except Exception:  # a failing reaction must not end the subscription
            log.exception("%s failed", what)
