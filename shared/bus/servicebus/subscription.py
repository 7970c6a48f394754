"""A Service Bus subscription's receiving end: peek-lock, settle behind, reconnect.

See the package docstring for why completions run on a background thread and why
application properties are decoded from bytes.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

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


class ServiceBusSubscription:
    """A peek-lock receiver on one subscription, reopened when its connection drops."""

    def __init__(self, client: ServiceBusClient, topic: str, name: str) -> None:
        self._client = client
        self._topic = topic
        self._name = name
        self._receiver: ServiceBusReceiver | None = None
        self._lock = threading.Lock()
        self._settler = ThreadPoolExecutor(1, thread_name_prefix=f"settle-{name}")
        self._settling: Future[None] | None = None

    @property
    def name(self) -> str:
        return self._name

    def receive(self, timeout: float, max_messages: int = 32) -> list[BusMessage]:
        if max_messages < 1:
            raise ValueError(f"max_messages must be at least 1, not {max_messages}")
        deadline = time.monotonic() + max(timeout, 0.0)
        with self._lock:
            self._wait_for_settlement()
            while True:
                wait = max(deadline - time.monotonic(), MIN_WAIT_SECONDS)
                try:
                    receiver = self._open()
                    meter.record("bus", "receive")
                    received = receiver.receive_messages(
                        max_message_count=MESSAGES_PER_CALL, max_wait_time=wait
                    )
                except TRANSIENT_ERRORS as exc:
                    _LOGGER.warning("subscription %s: reconnecting after %r", self._name, exc)
                    self._drop_receiver()
                    if deadline - time.monotonic() <= RECONNECT_PAUSE_SECONDS:
                        return []
                    time.sleep(RECONNECT_PAUSE_SECONDS)
                    continue
                if received:
                    self._settling = self._settler.submit(_complete_all, receiver, received)
                return [_bus_message(m) for m in received]

    def close(self) -> None:
        with self._lock:
            self._wait_for_settlement()
            self._drop_receiver()
        self._settler.shutdown()

    def _wait_for_settlement(self) -> None:
        settling, self._settling = self._settling, None
        if settling is not None:
            settling.result()

    def _open(self) -> ServiceBusReceiver:
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


def _complete_all(receiver: ServiceBusReceiver, messages: list[ServiceBusReceivedMessage]) -> None:
    """Complete ``messages``; a failed completion only means a later redelivery.

    Triggers are hints, so a message whose completion fails (its lock was lost, the
    connection dropped) has still been handed out: at worst it arrives once more, and a
    processor woken twice finds the queues as they are.
    """
    for message in messages:
        try:
            receiver.complete_message(message)
        except ServiceBusError as exc:
            _LOGGER.warning("could not complete trigger %s: %r", message.message_id, exc)


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _bus_message(message: ServiceBusReceivedMessage) -> BusMessage:
    body = message.body
    if isinstance(body, bytes | bytearray):
        payload = bytes(body)
    elif isinstance(body, str):
        payload = body.encode()
    else:
        payload = b"".join(body)
    properties = {_text(k): _text(v) for k, v in (message.application_properties or {}).items()}
    return BusMessage(
        body=payload,
        properties=properties,
        message_id=str(message.message_id or ""),
        delivery_count=message.delivery_count or 0,
    )
