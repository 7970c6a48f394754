"""The proton event handler: the wire side of the test broker.

One handler serves every connection. What the azure-servicebus SDK (pyamqp) needs from it:

* SASL ANONYMOUS: pyamqp always negotiates SASL, even without TLS, and a proton server
  only offers it when asked (``allowed_mechs`` once the transport is bound);
* attach replies that carry both source and target (pyamqp detaches otherwise), and an
  attach to an unknown entity answered, then closed with ``amqp:not-found`` (the SDK
  raises ``MessagingEntityNotFoundError``);
* request-response on ``$cbs`` and ``<entity>/$management`` (see ``requests``), the reply
  sent on this connection's link whose source (or target, for ``reply_to``) matches;
* peek-lock deliveries and settlements echoed back (see ``peek_lock``), drains answered.

Every event method runs under the namespace lock and through :func:`guarded`: proton's
``Container.run()`` dies on the first exception a handler raises, so one bad event would
otherwise stop the broker for every test connection.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from proton import Condition, Connection, Endpoint, Event, Handler, Link, Sender
from proton.reactor import Container

from tests.support.sb_broker.addresses import Address, Kind, parse_address
from tests.support.sb_broker.conditions import INTERNAL_ERROR, NOT_ALLOWED, NOT_FOUND, amqp_error
from tests.support.sb_broker.entities import MessageQueue, Namespace
from tests.support.sb_broker.incoming import INCOMING_CREDIT, active_links, receive
from tests.support.sb_broker.message_format import FormatTracer
from tests.support.sb_broker.peek_lock import pump, settle

_LOGGER = logging.getLogger(__name__)
_H = TypeVar("_H", bound="BrokerHandler")
_T = TypeVar("_T")

#: how long a refused sending link stays attached, to reject what the client sent at once
REFUSAL_DELAY = 0.2
#: how often lock expiry is checked (seconds)
LOCK_SWEEP_INTERVAL = 0.05


class _Acceptor(Protocol):  # proton.reactor keeps its Acceptor and Task classes private
    def close(self) -> None: ...


class _Task(Protocol):
    def cancel(self) -> None: ...


def _given(value: _T | None) -> _T:
    """Proton types every event accessor as optional; the events handled here always set it."""
    if value is None:
        raise LookupError("the event lacks the endpoint its kind implies")
    return value


def guarded(method: Callable[[_H, Event], None]) -> Callable[[_H, Event], None]:
    """Run an event method under the namespace lock; on error, log it and fail the endpoint."""

    @functools.wraps(method)
    def run(self: _H, event: Event) -> None:
        with self.namespace.lock:
            try:
                method(self, event)
            except Exception as exc:
                _LOGGER.exception("test broker: %s failed", method.__name__)
                self.errors.append(exc)
                self.fail_endpoint(event, exc)

    return run


class BrokerHandler(Handler):
    def __init__(
        self,
        namespace: Namespace,
        host: str,
        port: int,
        *,
        errors: list[Exception],
        on_listening: Callable[[], None],
    ) -> None:
        super().__init__()
        self.namespace = namespace
        self.errors = errors
        self._on_listening = on_listening
        self._address = f"{host}:{port}"
        self._connections: set[Connection] = set()
        self._acceptor: _Acceptor | None = None
        self._sweeper: _Task | None = None

    # --- reactor lifecycle -----------------------------------------------------------------
    def on_reactor_init(self, event: Event) -> None:
        # Not guarded: a port that cannot be bound must fail start(), not be logged away.
        self._acceptor = event.container.listen(self._address)
        self._sweeper = event.container.schedule(LOCK_SWEEP_INTERVAL, self)
        self._on_listening()

    @guarded
    def on_timer_task(self, event: Event) -> None:
        self._sweeper = event.container.schedule(LOCK_SWEEP_INTERVAL, self)
        if self.namespace.expire_locks(time.time()):
            self._pump()

    @guarded
    def on_broker_call(self, event: Event) -> None:
        """A function another thread asked to run on the reactor thread."""
        event.subject()

    def shut_down(self, container: Container) -> None:
        """Drop every connection without an AMQP close, as a crashed broker would."""
        if self._acceptor is not None:
            self._acceptor.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for connection in self._connections:
            if connection.transport is not None:
                connection.transport.close_tail()
                connection.transport.close_head()
        self._connections.clear()
        container.stop()

    def fail_endpoint(self, event: Event, exc: Exception) -> None:
        """Close the link (or connection) an event failed on, so its client does not hang."""
        condition = amqp_error(INTERNAL_ERROR, f"test broker error: {exc!r}")
        try:
            endpoint = event.link or event.connection
            if endpoint is not None and endpoint.state & Endpoint.LOCAL_ACTIVE:
                endpoint.condition = condition
                endpoint.close()
        except Exception:
            _LOGGER.exception("test broker: could not close the failed endpoint")

    # --- connections, sessions ---------------------------------------------------------------
    @guarded
    def on_connection_init(self, event: Event) -> None:
        self._connections.add(_given(event.connection))

    @guarded
    def on_connection_bound(self, event: Event) -> None:
        transport = _given(event.transport)
        transport.sasl().allowed_mechs("ANONYMOUS")
        FormatTracer().install(transport)

    @guarded
    def on_connection_remote_open(self, event: Event) -> None:
        connection = _given(event.connection)
        if connection.state & Endpoint.LOCAL_UNINIT:
            connection.open()

    @guarded
    def on_connection_remote_close(self, event: Event) -> None:
        _given(event.connection).close()

    @guarded
    def on_transport_closed(self, event: Event) -> None:
        self._connections.discard(event.connection)

    @guarded
    def on_session_remote_open(self, event: Event) -> None:
        session = _given(event.session)
        if session.state & Endpoint.LOCAL_UNINIT:
            session.open()

    @guarded
    def on_session_remote_close(self, event: Event) -> None:
        _given(event.session).close()

    # --- links ---------------------------------------------------------------------------------
    @guarded
    def on_link_remote_open(self, event: Event) -> None:
        link = _given(event.link)
        node = link.remote_target.address if link.is_receiver else link.remote_source.address
        address = parse_address(node)
        refusal = self._refusal(link, address)
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        link.snd_settle_mode = link.remote_snd_settle_mode
        link.rcv_settle_mode = link.remote_rcv_settle_mode
        link.open()
        if refusal is None:
            link.sb_address = address
            if link.is_receiver:
                link.flow(INCOMING_CREDIT)
        elif link.is_sender:  # the client receives: it waits for our detach before anything
            link.condition = refusal
            link.close()
        else:
            # The client sends. pyamqp transfers as soon as it reads our attach, before it
            # reads a detach right behind it, and then reports the lost transfer as an
            # unknown error. So take that transfer and reject it with the refusal (the
            # SDK raises MessagingEntityNotFoundError), and detach a moment later.
            link.sb_refusal = refusal
            link.flow(1)
            event.container.schedule(REFUSAL_DELAY, _CloseLink(link, refusal))

    def _refusal(self, link: Link, address: Address | None) -> Condition | None:
        node = link.remote_target.address if link.is_receiver else link.remote_source.address
        if address is None:
            return amqp_error(NOT_FOUND, f"the test broker has no node {node!r}")
        if address.kind is Kind.CBS or address.entity is None:
            return None
        entity = address.entity
        if entity.subscription is None:
            if self.namespace.topic(entity.topic) is None:
                return amqp_error(NOT_FOUND, f"no topic {entity.topic!r} (add_topic() it)")
            if address.kind is Kind.ENTITY and link.is_sender:
                return amqp_error(NOT_ALLOWED, "receive from a subscription, not a topic")
            return None
        if self.namespace.find_queue(entity) is None:
            return amqp_error(NOT_FOUND, f"no subscription {entity} (add_subscription() it)")
        if address.kind is Kind.ENTITY and link.is_receiver:
            return amqp_error(NOT_ALLOWED, "send to the topic, not to a subscription")
        return None

    @guarded
    def on_link_remote_close(self, event: Event) -> None:
        _given(event.link).close()

    @guarded
    def on_link_flow(self, event: Event) -> None:
        if _given(event.link).is_sender:
            self._pump()

    # --- deliveries ------------------------------------------------------------------------------
    @guarded
    def on_delivery(self, event: Event) -> None:
        link, delivery = _given(event.link), _given(event.delivery)
        changed = receive(delivery, link, self.namespace) if link.is_receiver else settle(delivery)
        if changed:
            self._pump()

    # --- handing out messages ------------------------------------------------------------------
    def _pump(self) -> None:
        pump(self._consumers(), time.time())

    def waiting_receivers(self, queue: MessageQueue) -> int:
        """How many receivers of ``queue`` are attached and have asked for messages."""
        return sum(1 for link, q in self._consumers() if q is queue and link.credit > 0)

    def _consumers(self) -> list[tuple[Sender, MessageQueue]]:
        consumers: list[tuple[Sender, MessageQueue]] = []
        for connection in self._connections:
            for link in active_links(connection):
                address: Address | None = getattr(link, "sb_address", None)
                if not isinstance(link, Sender) or address is None or address.entity is None:
                    continue
                queue = self.namespace.find_queue(address.entity)
                if address.kind is Kind.ENTITY and queue is not None:
                    consumers.append((link, queue))
        return consumers


class _CloseLink(Handler):
    """A timer task: close a link with an error unless it is closed already."""

    def __init__(self, link: Link, condition: Condition) -> None:
        super().__init__()
        self._link = link
        self._condition = condition

    def on_timer_task(self, event: Event) -> None:
        if self._link.state & Endpoint.LOCAL_ACTIVE:
            self._link.condition = self._condition
            self._link.close()
