"""Peek-lock on the wire: hand locked messages to receivers, apply and echo their outcomes.

The delivery tag is the 16 bytes of the lock token (the SDK reads ``UUID(bytes_le=tag)``;
proton's ``Delivery.tag`` getter cannot read such a binary tag, so the broker keeps the
queue and token on the delivery instead). The SDK waits for the broker to confirm each
settlement with the outcome it applied (``accepted`` for complete, ``modified`` for
abandon, ``rejected`` without error for dead-letter), and takes a ``rejected`` carrying an
error as a failed settlement: that is how a lost lock is reported.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from proton import Delivery, Sender, timestamp

from tests.support.sb_broker.codec import encode_for_delivery
from tests.support.sb_broker.conditions import LOCK_LOST, NOT_IMPLEMENTED, amqp_error
from tests.support.sb_broker.entities import LockLostError, MessageQueue, QueuedMessage

_OUTCOMES = (Delivery.ACCEPTED, Delivery.REJECTED, Delivery.RELEASED, Delivery.MODIFIED)


def pump(consumers: Sequence[tuple[Sender, MessageQueue]], now: float) -> None:
    """Give available messages to receivers with credit, one per receiver per round."""
    delivered = True
    while delivered:
        delivered = False
        for link, queue in consumers:
            if link.credit > 0 and (message := queue.acquire(now)) is not None:
                deliver(link, queue, message)
                delivered = True
    for link, _ in consumers:
        if link.drain_mode and link.credit > 0:
            link.drained()  # nothing left to send: use up the credit and tell the receiver


def deliver(link: Sender, queue: MessageQueue, message: QueuedMessage) -> None:
    assert message.lock_token is not None, "only acquired (locked) messages are delivered"
    annotations = {
        "x-opt-sequence-number": message.sequence_number,
        "x-opt-enqueued-time": _timestamp(message.enqueued_at),
        "x-opt-locked-until": _timestamp(message.locked_until),
    }
    payload = encode_for_delivery(
        message.message,
        delivery_count=message.delivery_count,
        annotations=annotations,
        extra_properties=message.extra_properties,
    )
    # proton annotates the tag as str but passes bytes through unchanged
    delivery = link.delivery(message.lock_token.bytes_le)  # type: ignore[arg-type]
    delivery.sb_lock = (queue, message.lock_token)
    link.stream(payload)
    link.advance()


def settle(delivery: Delivery) -> bool:
    """Apply the receiver's outcome for ``delivery`` and echo it; tell if anything changed."""
    lock: tuple[MessageQueue, uuid.UUID] | None = getattr(delivery, "sb_lock", None)
    if lock is None:  # a pre-settled reply on a request-response link
        if delivery.settled:
            delivery.settle()
        return False
    state = delivery.remote_state
    if state not in _OUTCOMES:
        if not delivery.settled:
            return False  # no outcome yet
        state = Delivery.RELEASED  # settled without an outcome: nothing was consumed
    queue, token = lock
    try:
        _apply(queue, token, delivery, state)
        delivery.local.failed = delivery.remote.failed
        delivery.local.undeliverable = delivery.remote.undeliverable
        delivery.update(state)
    except LockLostError as exc:
        delivery.local.condition = amqp_error(LOCK_LOST, str(exc))
        delivery.update(Delivery.REJECTED)
    except NotImplementedError as exc:
        delivery.local.condition = amqp_error(NOT_IMPLEMENTED, str(exc))
        delivery.update(Delivery.REJECTED)
    delivery.settle()
    return True


def _apply(queue: MessageQueue, token: uuid.UUID, delivery: Delivery, state: Any) -> None:
    if state == Delivery.ACCEPTED:
        queue.complete(token)
    elif state == Delivery.RELEASED:
        queue.release(token)
    elif state == Delivery.MODIFIED:
        if delivery.remote.undeliverable:
            raise NotImplementedError("defer (modified, undeliverable-here) is not supported")
        queue.abandon(token, counted=delivery.remote.failed)
    else:  # REJECTED: dead-letter, with the reason the SDK puts in the error's info map
        info = delivery.remote.condition.info if delivery.remote.condition else None
        details = info if isinstance(info, dict) else {}
        reason = details.get("DeadLetterReason") or ""
        description = details.get("DeadLetterErrorDescription") or ""
        queue.dead_letter(token, str(reason), str(description))


def _timestamp(seconds: float) -> timestamp:
    return timestamp(int(seconds * 1000))
