"""What clients send: messages for a topic, and requests for ``$cbs`` or ``$management``.

A topic transfer is one message, or a batch (message-format ``0x80013700``) holding one
message per data section; a batch is parsed whole before anything is published, so a bad
one is rejected without leaving half of it behind. Requests are answered on the link of the
same connection the requester listens on: CBS put-tokens carry no ``reply_to``, so the link
is found by its source address; ``$management`` requests name it in ``reply_to``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from proton import Condition, Connection, Delivery, Endpoint, Link, Message

from tests.support.sb_broker.addresses import Address, Kind
from tests.support.sb_broker.codec import (
    BATCH_MESSAGE_FORMAT,
    MalformedMessageError,
    parse_message,
    unpack_batch,
)
from tests.support.sb_broker.conditions import DECODE_ERROR, amqp_error
from tests.support.sb_broker.entities import Namespace
from tests.support.sb_broker.message_format import FormatTracer
from tests.support.sb_broker.requests import cbs_reply, management_reply

#: credit kept open on every link the SDK sends on
INCOMING_CREDIT = 100
_ACTIVE = Endpoint.LOCAL_ACTIVE | Endpoint.REMOTE_ACTIVE


def active_links(connection: Connection) -> Iterator[Link]:
    link = connection.link_head(_ACTIVE)
    while link is not None:
        yield link
        link = link.next(_ACTIVE)


def receive(delivery: Delivery, link: Link, namespace: Namespace) -> bool:
    """Take one complete incoming delivery; tell whether queues may have gained messages."""
    if delivery.partial:
        return False  # more frames of this message are on their way
    message_format = _formats(link).take(link.name)
    if delivery.aborted:
        delivery.settle()
        return False
    payload = link.recv(delivery.pending) or b""
    link.advance()
    refusal: Condition | None = getattr(link, "sb_refusal", None)
    try:
        if refusal is not None:
            delivery.local.condition = refusal
            delivery.update(Delivery.REJECTED)
        else:
            _handle(link, link.sb_address, payload, message_format, namespace)
            delivery.update(Delivery.ACCEPTED)
    except MalformedMessageError as exc:
        delivery.local.condition = amqp_error(DECODE_ERROR, str(exc))
        delivery.update(Delivery.REJECTED)
    delivery.settle()
    if link.credit < INCOMING_CREDIT // 2:
        link.flow(INCOMING_CREDIT - link.credit)
    return refusal is None


def _formats(link: Link) -> FormatTracer:
    transport = link.connection.transport
    tracer = transport.tracer if transport is not None else None
    assert isinstance(tracer, FormatTracer), "installed when the connection was bound"
    return tracer


def _handle(
    link: Link, address: Address, payload: bytes, message_format: int, namespace: Namespace
) -> None:
    if address.kind is Kind.CBS:
        _reply(link, _decoded(payload), cbs_reply)
        return
    assert address.entity is not None, "only $cbs has no entity"
    if address.kind is Kind.MANAGEMENT:
        queue = namespace.find_queue(address.entity)
        _reply(link, _decoded(payload), lambda r: management_reply(r, queue, time.time()))
        return
    raw = unpack_batch(payload) if message_format == BATCH_MESSAGE_FORMAT else [payload]
    messages = [parse_message(m) for m in raw]
    topic = namespace.topic(address.entity.topic)
    assert topic is not None, "the topic was checked at attach"
    now = time.time()
    for message in messages:
        topic.publish(message, now)


def _reply(request_link: Link, request: Message, answer: Callable[[Message], Message]) -> None:
    """Send ``answer(request)`` on the link the requester listens on, pre-settled."""
    wanted = {request.reply_to, request_link.remote_target.address} - {None}
    for link in active_links(request_link.connection):
        if link.is_sender and (
            link.remote_target.address in wanted or link.source.address in wanted
        ):
            link.send(answer(request)).settle()
            return
    raise LookupError(f"no reply link for a request on {request_link.remote_target.address!r}")


def _decoded(payload: bytes) -> Message:
    message = Message()
    message.decode(payload)
    return message
