"""A wire-level Azure Service Bus stand-in for tests: the unchanged SDK talks AMQP 1.0 to it.

No Service Bus emulator runs on our machines (Microsoft's needs Docker), so this small
broker, written with ``python-qpid-proton``, lets ``azure-servicebus`` connect with the
emulator connection string and do what our code does: send (also in batches) to a topic,
receive from filtered subscriptions in peek-lock mode, complete, abandon, dead-letter,
renew locks. It is a test double of ours, not an emulator we ship.

Entities are configured in code, never over the wire, because the SDK's administration
client speaks HTTP, which this broker does not. Pre-create what a test needs::

    broker = ServiceBusBroker()
    broker.add_topic("triggers")
    broker.add_subscription("triggers", "high", {"Priority": "High"})  # correlation filter
    broker.add_subscription("triggers", "all")                          # takes everything
    broker.add_subscription("triggers", "both", filters=[{"Priority": "High"}, {"Kind": "gate"}])
    broker.start()
    ServiceBusClient.from_connection_string(broker.connection_string)  # the real SDK

or, with ``auto_create_subscriptions=True``, a receiver may name an unknown subscription
of a known topic and it is created on attach, its filter read from the name:
``label@Key=Value&Key2=Value2`` (see ``sb_broker.entities.filter_from_name``).

Entities and their messages survive :meth:`ServiceBusBroker.stop` and
:meth:`ServiceBusBroker.start` (a durable broker restarting), which is how tests kill the
broker under a waiting receiver: ``stop()`` drops every connection without an AMQP close,
``start()`` listens again on the same port.

The broker runs on a thread of the test process. A failure inside one of its event
handlers is logged and appended to :attr:`ServiceBusBroker.errors` instead of stopping it;
the pytest fixture fails the test if any were recorded.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import TypeVar

from proton.reactor import ApplicationEvent, Container, EventInjector

from tests.support.sb_broker.addresses import EntityPath
from tests.support.sb_broker.entities import (
    DEFAULT_LOCK_DURATION,
    DEFAULT_MAX_DELIVERY_COUNT,
    Namespace,
    QueuedMessage,
)
from tests.support.sb_broker.handler import BrokerHandler

_STARTUP_TIMEOUT = 10.0
_R = TypeVar("_R")


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


class ServiceBusBroker:
    """Topics and subscriptions served over AMQP 1.0 on a loopback port."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        auto_create_subscriptions: bool = False,
    ) -> None:
        self.host = host
        self.port = port or _free_port(host)
        self.namespace = Namespace(auto_create_subscriptions=auto_create_subscriptions)
        #: exceptions raised inside event handlers (the broker kept running after each)
        self.errors: list[Exception] = []
        self._handler: BrokerHandler | None = None
        self._container: Container | None = None
        self._injector: EventInjector | None = None
        self._thread: threading.Thread | None = None

    @property
    def connection_string(self) -> str:
        """The emulator form: no TLS, any key (the broker accepts every token)."""
        return (
            f"Endpoint=sb://{self.host}:{self.port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=anything;UseDevelopmentEmulator=true"
        )

    # --- entities (callable from any thread, before or after start) -------------------------
    def add_topic(self, name: str) -> None:
        with self.namespace.lock:
            self.namespace.add_topic(name)

    def add_subscription(
        self,
        topic: str,
        name: str,
        filter: Mapping[str, str] | None = None,
        *,
        filters: Sequence[Mapping[str, str]] = (),
        max_delivery_count: int = DEFAULT_MAX_DELIVERY_COUNT,
        lock_duration: float = DEFAULT_LOCK_DURATION,
    ) -> None:
        """Add a subscription whose correlation filter matches these application properties,
        or with several ``filters`` (one rule each), any of which selects a message."""
        with self.namespace.lock:
            self.namespace.add_subscription(
                topic,
                name,
                filter,
                filters=filters,
                max_delivery_count=max_delivery_count,
                lock_duration=lock_duration,
            )

    def messages(
        self, topic: str, subscription: str, *, dead_letter: bool = False
    ) -> list[QueuedMessage]:
        """Copies of what a subscription (or its dead-letter sub-queue) holds, oldest first."""
        with self.namespace.lock:
            queue = self.namespace.find_queue(EntityPath(topic, subscription, dead_letter))
            if queue is None:
                raise KeyError(f"no subscription {topic}/{subscription}")
            return [dataclasses.replace(m) for m in queue.messages()]

    def waiting_receivers(self, topic: str, subscription: str) -> int:
        """Receivers attached to the subscription with credit: blocked in a receive call."""
        handler = self._handler
        if handler is None or not self.running:
            raise RuntimeError("the broker is not running")
        with self.namespace.lock:
            queue = self.namespace.find_queue(EntityPath(topic, subscription))
        if queue is None:
            raise KeyError(f"no subscription {topic}/{subscription}")
        return self._call(lambda: handler.waiting_receivers(queue))

    # --- lifecycle ----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Listen on ``self.port`` (the same one after a stop) and serve on a thread."""
        if self.running:
            raise RuntimeError("the broker is already running")
        started = threading.Event()
        failure: list[BaseException] = []
        handler = BrokerHandler(
            self.namespace, self.host, self.port, errors=self.errors, on_listening=started.set
        )
        container = Container(handler)
        injector = EventInjector()
        container.selectable(injector)

        def serve() -> None:
            try:
                container.run()
            except BaseException as exc:  # a start failure (port taken) or a proton bug
                failure.append(exc)
            finally:
                started.set()

        self._handler, self._container, self._injector = handler, container, injector
        self._thread = threading.Thread(
            target=serve, name=f"servicebus-broker:{self.port}", daemon=True
        )
        self._thread.start()
        if not started.wait(_STARTUP_TIMEOUT) or failure:
            self._thread = None
            raise RuntimeError(f"the test broker did not start on {self.host}:{self.port}") from (
                failure[0] if failure else None
            )

    def stop(self) -> None:
        """Drop every connection abruptly and stop listening (entities and messages stay)."""
        if not self.running:
            return
        assert self._handler is not None
        assert self._container is not None
        assert self._injector is not None
        assert self._thread is not None
        handler, container = self._handler, self._container
        self._call(lambda: handler.shut_down(container))
        self._injector.close()
        self._thread.join(_STARTUP_TIMEOUT)
        self._thread = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def _call(self, function: Callable[[], _R]) -> _R:
        """Run ``function`` on the broker thread (proton objects are not thread-safe)."""
        assert self._injector is not None
        done: Future[_R] = Future()

        def run() -> None:
            try:
                done.set_result(function())
            except BaseException as exc:
                done.set_exception(exc)

        self._injector.trigger(ApplicationEvent("broker_call", subject=run))
        return done.result(_STARTUP_TIMEOUT)

    def __enter__(self) -> ServiceBusBroker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
