"""AMQP 1.0 message sections: split what a sender wrote, rewrite what the broker owns.

The broker keeps a sender's sections byte for byte (properties, application properties,
body, footer) and rewrites only the sections Service Bus itself fills in on delivery: the
header (delivery count) and the message annotations (sequence number, enqueued time,
locked-until). Working on encoded sections instead of decoding into ``proton.Message`` and
encoding again keeps the types a sender chose (an ``int`` property stays an ``int``, a
``str`` never becomes a symbol).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proton import Data, DataException, Described, symbol, uint, ulong

HEADER = 0x70
DELIVERY_ANNOTATIONS = 0x71
MESSAGE_ANNOTATIONS = 0x72
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA = 0x75
FOOTER = 0x78

#: message-format of a Service Bus batch send: each data section holds one whole message.
BATCH_MESSAGE_FORMAT = 0x80013700


class MalformedMessageError(ValueError):
    """The payload is not a sequence of AMQP message sections."""


@dataclass(frozen=True)
class Section:
    code: int
    value: Any
    raw: bytes


def split_sections(payload: bytes) -> list[Section]:
    """Decode ``payload`` one described value at a time, keeping each one's bytes."""
    sections: list[Section] = []
    offset = 0
    while offset < len(payload):
        data = Data()
        try:
            consumed = data.decode(payload[offset:])
        except DataException as exc:
            raise MalformedMessageError(f"undecodable bytes at offset {offset}: {exc}") from exc
        data.rewind()
        data.next()
        value = data.get_object()
        if not isinstance(value, Described) or not isinstance(value.descriptor, ulong):
            raise MalformedMessageError(
                f"offset {offset} is not a section with a numeric descriptor"
            )
        raw = payload[offset : offset + consumed]
        sections.append(Section(int(value.descriptor), _detached(value.value), raw))
        offset += consumed
    return sections


def _detached(value: Any) -> Any:
    """``value`` without memoryviews: proton's binary values point into the ``Data`` buffer,
    which is freed with the ``Data`` object."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, list):
        return [_detached(v) for v in value]
    if isinstance(value, dict):
        return {_detached(k): _detached(v) for k, v in value.items()}
    return value


def unpack_batch(payload: bytes) -> list[bytes]:
    """The messages of a batch transfer: the contents of its data sections, in order.

    The batch envelope also carries a properties section (the first message's id); it only
    exists to satisfy AMQP and is dropped.
    """
    messages = [bytes(s.value) for s in split_sections(payload) if s.code == DATA]
    if not messages:
        raise MalformedMessageError("a batch transfer without any data section")
    return messages


@dataclass(frozen=True)
class ParsedMessage:
    """A message as a sender wrote it, split into what the broker reads and what it keeps."""

    header: tuple[Any, ...]
    annotations: Mapping[Any, Any]
    message_id: str
    application_properties: Mapping[str, Any]
    properties_raw: bytes
    application_properties_raw: bytes
    body_raw: bytes


def parse_message(payload: bytes) -> ParsedMessage:
    header: tuple[Any, ...] = ()
    annotations: Mapping[Any, Any] = {}
    message_id = ""
    app_properties: Mapping[str, Any] = {}
    properties_raw = app_properties_raw = b""
    body = bytearray()
    for section in split_sections(payload):
        if section.code == HEADER:
            header = tuple(section.value or ())
        elif section.code == DELIVERY_ANNOTATIONS:
            continue  # addressed to the broker hop, never forwarded
        elif section.code == MESSAGE_ANNOTATIONS:
            annotations = dict(section.value or {})
        elif section.code == PROPERTIES:
            fields = section.value or []
            message_id = "" if not fields or fields[0] is None else str(fields[0])
            properties_raw = section.raw
        elif section.code == APPLICATION_PROPERTIES:
            app_properties = {str(k): v for k, v in (section.value or {}).items()}
            app_properties_raw = section.raw
        else:  # body sections and the footer, in the order sent
            body.extend(section.raw)
    return ParsedMessage(
        header,
        annotations,
        message_id,
        app_properties,
        properties_raw,
        app_properties_raw,
        bytes(body),
    )


def _encode(value: Any) -> bytes:
    data = Data()
    data.put_object(value)
    return bytes(data.encode())


def encode_for_delivery(
    message: ParsedMessage,
    *,
    delivery_count: int,
    annotations: Mapping[str, Any],
    extra_properties: Mapping[str, str],
) -> bytes:
    """The bytes of one delivery: a fresh header and annotations, the sender's other sections.

    ``delivery_count`` is the header field (failed deliveries so far, 0 the first time).
    ``extra_properties`` are application properties the broker adds (dead-letter reasons);
    only then is the sender's application-properties section re-encoded.
    """
    durable, priority, ttl = [*message.header, None, None, None][:3]
    header = [durable, priority, ttl, delivery_count == 0, uint(delivery_count)]
    merged_annotations = dict(message.annotations)
    merged_annotations.update({symbol(k): v for k, v in annotations.items()})
    if extra_properties:
        merged = {**message.application_properties, **extra_properties}
        app_properties = _encode(Described(ulong(APPLICATION_PROPERTIES), merged))  # type: ignore[arg-type]
    else:
        app_properties = message.application_properties_raw
    return b"".join(
        [
            _encode(Described(ulong(HEADER), header)),
            _encode(Described(ulong(MESSAGE_ANNOTATIONS), merged_annotations)),
            message.properties_raw,
            app_properties,
            message.body_raw,
        ]
    )
