"""Answers to request-response messages: the ``$cbs`` put-token and ``$management`` calls.

Both reply with ``correlation_id`` set to the request's ``message_id`` and a status code in
the application properties, under two different names: CBS uses ``status-code`` (and the
SDK accepts any 2xx; real Service Bus answers 202), ``$management`` uses ``statusCode``.
The test broker trusts every token: it checks neither signature nor audience.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from proton import UNDESCRIBED, Array, Data, Message, symbol, timestamp

from tests.support.sb_broker.conditions import LOCK_LOST
from tests.support.sb_broker.entities import LockLostError, MessageQueue

RENEW_LOCK = "com.microsoft:renew-lock"
UPDATE_DISPOSITION = "com.microsoft:update-disposition"


def cbs_reply(request: Message) -> Message:
    """Accept any put-token request (the SDK sends one per link before attaching it)."""
    return Message(
        correlation_id=request.id,
        properties={"status-code": 202, "status-description": "Accepted"},
    )


def _reply(
    request: Message, status: int, description: str, body: Any = None, condition: str = ""
) -> Message:
    properties: dict[str, Any] = {"statusCode": status, "statusDescription": description}
    if condition:
        properties["errorCondition"] = symbol(condition)
    return Message(
        correlation_id=request.id, properties=properties, body=body if body is not None else {}
    )


def _lock_tokens(body: Mapping[str, Any]) -> list[uuid.UUID]:
    tokens = body.get("lock-tokens", [])
    elements = tokens.elements if isinstance(tokens, Array) else tokens
    return [t if isinstance(t, uuid.UUID) else uuid.UUID(str(t)) for t in elements]


def _renew_locks(queue: MessageQueue, body: Mapping[str, Any], now: float) -> Any:
    expirations = [timestamp(int(queue.renew(t, now) * 1000)) for t in _lock_tokens(body)]
    # UNDESCRIBED is proton's own marker for a plain array, though annotated otherwise
    return {symbol("expirations"): Array(UNDESCRIBED, Data.TIMESTAMP, *expirations)}  # type: ignore[arg-type]


def _update_disposition(queue: MessageQueue, body: Mapping[str, Any], now: float) -> Any:
    settle: dict[str, Callable[[uuid.UUID], None]] = {
        "completed": queue.complete,
        "abandoned": queue.abandon,
        "suspended": lambda token: queue.dead_letter(
            token,
            str(body.get("deadletter-reason", "")),
            str(body.get("deadletter-description", "")),
        ),
    }
    status = str(body.get("disposition-status", ""))
    if status not in settle:
        raise NotImplementedError(f"disposition-status {status!r}")
    for token in _lock_tokens(body):
        settle[status](token)
    return {}


_OPERATIONS: dict[str, Callable[[MessageQueue, Mapping[str, Any], float], Any]] = {
    RENEW_LOCK: _renew_locks,
    UPDATE_DISPOSITION: _update_disposition,
}


def management_reply(request: Message, queue: MessageQueue | None, now: float) -> Message:
    """Run one ``$management`` operation on the entity the management link belongs to."""
    properties: Mapping[str, Any] = request.properties or {}
    operation = str(properties.get("operation", ""))
    handler = _OPERATIONS.get(operation)
    if handler is None or queue is None:
        return _reply(request, 501, f"the test broker does not implement {operation!r} here")
    body = request.body if isinstance(request.body, Mapping) else {}
    try:
        return _reply(request, 200, "OK", handler(queue, body, now))
    except LockLostError as exc:
        return _reply(request, 410, str(exc), condition=LOCK_LOST)
    except NotImplementedError as exc:
        return _reply(request, 501, f"the test broker does not implement {exc}")
