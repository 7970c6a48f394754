"""A received Service Bus message as the port's :class:`~shared.bus.ports.BusMessage`.

The SDK hands application properties back with ``bytes`` keys and values
(``{b'Priority': b'High'}``, from real Service Bus too), and the body as bytes, a string or
a sequence of sections; the port promises ``str`` properties and one ``bytes`` body.
"""

from __future__ import annotations

from azure.servicebus import ServiceBusReceivedMessage

from shared.bus.ports import BusMessage


def bus_message(message: ServiceBusReceivedMessage) -> BusMessage:
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


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
