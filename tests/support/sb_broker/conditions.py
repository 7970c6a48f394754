"""AMQP error conditions the broker sends."""

from __future__ import annotations

from proton import Condition, symbol

LOCK_LOST = "com.microsoft:message-lock-lost"
NOT_FOUND = "amqp:not-found"
NOT_ALLOWED = "amqp:not-allowed"
INTERNAL_ERROR = "amqp:internal-error"
DECODE_ERROR = "amqp:decode-error"
NOT_IMPLEMENTED = "amqp:not-implemented"


def amqp_error(name: str, description: str) -> Condition:
    # pyamqp's sender reads the error's info field unconditionally (IndexError, then a hang
    # until timeout, when it is missing), and proton omits an empty map: always send one.
    return Condition(name, description, {symbol("x-opt-test-broker"): True})
