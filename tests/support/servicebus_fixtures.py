"""pytest fixtures for the Service Bus test broker (registered in ``tests/conftest.py``).

``servicebus_broker`` is a started :class:`ServiceBusBroker` on a free loopback port, with
no entities: a test adds the topic and subscriptions it needs (the SDK cannot create them
over AMQP). ``stop()`` / ``start()`` / ``restart()`` keep the port, for reconnect tests.
At the end the broker is stopped, and the test fails if any of its event handlers raised.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.servicebus_broker import ServiceBusBroker


@pytest.fixture
def servicebus_broker() -> Iterator[ServiceBusBroker]:
    broker = ServiceBusBroker()
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
    assert not broker.errors, f"the test broker's handlers raised: {broker.errors!r}"
