"""A Service Bus subscription's receiving end: long receives that a close interrupts.

**Why one thread owns the receiver.** A receive should block long: Service Bus bills every
receive call as an operation, and one call that waits 60 s costs what a call that waits 1 s
costs. But a stop must not wait a minute, and the SDK cannot interrupt a blocked receive:
its receiver is not thread-safe (the azure-servicebus README, "Thread safety"), and its
``close()`` from another thread would send frames on, and drop, the connection that the
receive loop is reading. So every SDK call of a subscription (open, receive, complete,
abandon, close) runs on one daemon thread, the *owner* (:class:`OwnerThread`), in order,
while :meth:`ServiceBusSubscription.receive` waits for the result on a condition that
:meth:`ServiceBusSubscription.close` signals too. A close returns at once; the SDK call
still pending ends on the owner thread within its ``max_wait_time``, which then abandons
what it got (so another receiver of a shared subscription gets it at once) and closes the
receiver and its client.

**A client of its own.** ``ServiceBusClient.close()`` closes every receiver the client
opened, which the bus's close would otherwise do from its own thread under a blocked
receive. Each subscription therefore gets its own client from the bus's factory (this costs
no connection: the SDK opens one per receiver anyway).

**Settled on hand-out.** Messages are completed once a caller has taken them (a job queued
behind the receive, while the caller works), never when only a closed end was waiting.
The owner thread is a daemon, unlike a ``ThreadPoolExecutor``'s, which the interpreter joins
at exit: a stopping process does not wait for a pending receive.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from azure.servicebus import (
    ServiceBusClient,
    ServiceBusReceivedMessage,
    ServiceBusReceiveMode,
    ServiceBusReceiver,
)
from azure.servicebus.exceptions import (
    OperationTimeoutError,
    ServiceBusCommunicationError,
    ServiceBusConnectionError,
    ServiceBusError,
    ServiceBusServerBusyError,
)

from shared import meter
from shared.bus.ports import BusMessage
from shared.bus.servicebus.received import bus_message

_LOGGER = logging.getLogger(__name__)

#: errors after which a receiver is reopened rather than the error raised
TRANSIENT_ERRORS = (
    ServiceBusConnectionError,
    ServiceBusCommunicationError,
    OperationTimeoutError,
    ServiceBusServerBusyError,
)
#: the SDK refuses a zero wait, so a zero timeout still waits this long
MIN_WAIT_SECONDS = 0.05
#: pause between reconnect attempts inside one receive()
RECONNECT_PAUSE_SECONDS = 0.2
#: Asked for more than one message, the SDK lingers 0.2 s after the first arrives, waiting
#: for the rest, and every wake-up would wait with it. So a receive returns the first
#: trigger at once; the others of a burst stay at the broker, unlocked, and come one per
#: call, each without waiting.
MESSAGES_PER_CALL = 1
#: How long a caller waits past its timeout for the SDK call (opening a connection is
#: part of the call); a call that takes longer stays pending for the next receive().
HANDOFF_MARGIN_SECONDS = 1.0
#: How long close() waits for the owner thread to close the receiver, when no receive is
#: pending (with one pending it does not wait: that is the point).
CLOSE_WAIT_SECONDS = 5.0


class OwnerThread:
    """Runs jobs one after another on a daemon thread: the only thread using the SDK."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def finish(self, wait: float) -> None:
        """Run what was submitted, then end; wait up to ``wait`` s for that."""
        self._jobs.put(None)
        self._thread.join(wait)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception:  # a job's own failure must not end the thread
                _LOGGER.exception("Service Bus receiver job failed")


@dataclass(eq=False)
class _Call:
    """One SDK receive, from submission until a caller takes it or a close drops it."""

    done: bool = False
    messages: list[ServiceBusReceivedMessage] = field(default_factory=list)
    receiver: ServiceBusReceiver | None = None
    error: Exception | None = None
    #: the end was closed before a caller took the messages: abandon them
    dropped: bool = False


class ServiceBusSubscription:
    """A peek-lock receiver on one subscription, reopened when its connection drops."""

    def __init__(
        self, client_factory: Callable[[], ServiceBusClient], topic: str, name: str
    ) -> None:
        self._client_factory = client_factory
        self._topic = topic
        self._name = name
        self._owner = OwnerThread(f"servicebus-{name}")
        # used on the owner thread only
        self._client: ServiceBusClient | None = None
        self._receiver: ServiceBusReceiver | None = None
        # guarded by self._changed
        self._changed = threading.Condition()
        self._call: _Call | None = None
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        if max_messages < 1:
            raise ValueError(f"max_messages must be at least 1, not {max_messages}")
        wait = max(timeout, MIN_WAIT_SECONDS) + HANDOFF_MARGIN_SECONDS
        with self._changed:
            if self._closed:
                raise RuntimeError(f"subscription {self._name!r}: this receiving end is closed")
            call = self._call or self._start_call(timeout)
            self._changed.wait_for(lambda: call.done or self._closed, wait)
            if self._closed or not call.done:
                return []  # closed meanwhile, or the call overran: it stays pending
            self._call = None
            if call.messages:  # queued before any close's shut-down, so it runs
                self._owner.submit(lambda: _settle(call, complete=True))
        if call.error is not None:
            raise call.error
        return [bus_message(m) for m in call.messages]

    def _start_call(self, timeout: float) -> _Call:
        """Submit an SDK receive to the owner thread (the caller holds ``self._changed``)."""
        call = self._call = _Call()
        self._owner.submit(lambda: self._receive_on_owner(call, timeout))
        return call

    def close(self) -> None:
        """Wake a waiting receive at once; the owner thread closes the receiver after the
        SDK call it is in, if any. Closing again does nothing."""
        with self._changed:
            if self._closed:
                return
            self._closed = True
            call, self._call = self._call, None
            # A call still running abandons what it gets itself (it sees `dropped`).
            pending = call is not None and not call.done
            if call is not None:
                call.dropped = True
            self._changed.notify_all()
        if call is not None and not pending:
            self._owner.submit(lambda: _settle(call, complete=False))
        self._owner.submit(self._shut_down)
        self._owner.finish(wait=0.0 if pending else CLOSE_WAIT_SECONDS)

    # --- on the owner thread ---------------------------------------------------------------
    def _receive_on_owner(self, call: _Call, timeout: float) -> None:
        deadline = time.monotonic() + max(timeout, 0.0)
        received: list[ServiceBusReceivedMessage] = []
        error: Exception | None = None
        try:
            received = self._receive_until(deadline)
        except Exception as exc:  # raised to the caller, as if in its own thread
            error = exc
        with self._changed:
            call.done, call.messages, call.error = True, received, error
            call.receiver = self._receiver
            dropped = call.dropped
            self._changed.notify_all()
        if dropped:
            _settle(call, complete=False)

    def _receive_until(self, deadline: float) -> list[ServiceBusReceivedMessage]:
        while True:
            wait = max(deadline - time.monotonic(), MIN_WAIT_SECONDS)
            try:
                receiver = self._open()
                meter.record("bus", "receive")
                return receiver.receive_messages(
                    max_message_count=MESSAGES_PER_CALL, max_wait_time=wait
                )
            except TRANSIENT_ERRORS as exc:
                _LOGGER.warning("subscription %s: reconnecting after %r", self._name, exc)
                self._drop_receiver()
                if self._closed or deadline - time.monotonic() <= RECONNECT_PAUSE_SECONDS:
                    return []
                time.sleep(RECONNECT_PAUSE_SECONDS)

    def _open(self) -> ServiceBusReceiver:
        if self._client is None:
            self._client = self._client_factory()
        if self._receiver is None:
            self._receiver = self._client.get_subscription_receiver(
                self._topic, self._name, receive_mode=ServiceBusReceiveMode.PEEK_LOCK
            )
        return self._receiver

    def _drop_receiver(self) -> None:
        receiver, self._receiver = self._receiver, None
        if receiver is not None:
            try:
                receiver.close()
            except ServiceBusError as exc:  # closing a receiver whose connection is gone
                _LOGGER.debug("subscription %s: close after a failure: %r", self._name, exc)

    def _shut_down(self) -> None:
        self._drop_receiver()
        client, self._client = self._client, None
        if client is not None:
            client.close()


def _settle(call: _Call, *, complete: bool) -> None:
    """Complete what was handed out, or abandon what nobody took; failures only log.

    Triggers are hints, so a message whose settlement fails (its lock was lost, the
    connection dropped) at worst arrives once more, and a processor woken twice finds the
    queues as they are. An abandoned one goes at once to another receiver of the
    subscription (or back to this subscription's next receiver).
    """
    receiver = call.receiver
    if receiver is None:
        return
    for message in call.messages:
        try:
            if complete:
                receiver.complete_message(message)
            else:
                receiver.abandon_message(message)
        except ServiceBusError as exc:
            _LOGGER.warning("could not settle trigger %s: %r", message.message_id, exc)
