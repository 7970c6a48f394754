"""Table entity properties as typed JSON, with Azure Tables' types and limits.

Each property is stored as ``[type, value]`` so it reads back as the type it was written
with, as Azure's Edm types do: ``str`` (Edm.String), ``int`` (Edm.Int32/Int64), ``float``
(Edm.Double), ``bool`` (Edm.Boolean), ``bytes`` (Edm.Binary) and ``datetime``
(Edm.DateTime, always read back in UTC; a naive one is taken as local time, as the SDK
does). ``None`` values are not stored, as Azure does not store nulls.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from shared.storage.embedded.names import bad_request

#: Azure's limits: 252 properties besides the keys and Timestamp, 64 KiB per string or
#: binary value, 1 MiB per entity.
MAX_PROPERTIES = 252
MAX_VALUE_BYTES = 64 * 1024
MAX_ENTITY_BYTES = 1024 * 1024
_RESERVED = frozenset({"PartitionKey", "RowKey", "Timestamp", "ETag"})
_INT64 = range(-(2**63), 2**63)

Encoded = tuple[str, Any]


def encode_value(name: str, value: object) -> Encoded:
    """A property value as a JSON-safe ``(type tag, value)`` pair; TypeError if unsupported."""
    if isinstance(value, bool):  # before int: bool is an int
        return "b", value
    if isinstance(value, int):
        if value not in _INT64:
            raise TypeError(f"property {name!r}: {value} does not fit in Edm.Int64")
        return "i", value
    if isinstance(value, float):
        return "d", value
    if isinstance(value, str):
        if len(value.encode("utf-16-le")) > MAX_VALUE_BYTES:
            raise bad_request("PropertyValueTooLarge", f"property {name!r} exceeds 64 KiB")
        return "s", str(value)
    if isinstance(value, bytes):
        if len(value) > MAX_VALUE_BYTES:
            raise bad_request("PropertyValueTooLarge", f"property {name!r} exceeds 64 KiB")
        return "x", base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime):
        return "t", value.astimezone(UTC).isoformat()
    raise TypeError(f"property {name!r}: type {type(value).__name__} is not supported")


def decode_value(encoded: Encoded) -> Any:
    tag, value = encoded
    if tag == "x":
        return base64.b64decode(value)
    if tag == "t":
        return datetime.fromisoformat(value)
    return value


def encode_properties(properties: Mapping[str, Any]) -> dict[str, Encoded]:
    """Validate names and values, drop ``None``s, and tag every value with its type."""
    encoded: dict[str, Encoded] = {}
    for name, value in properties.items():
        if name in _RESERVED or not _valid_property_name(name):
            raise bad_request("InvalidInput", f"{name!r} is not a valid property name")
        if value is not None:
            encoded[name] = encode_value(name, value)
    if len(encoded) > MAX_PROPERTIES:
        raise bad_request("TooManyProperties", f"{len(encoded)} > {MAX_PROPERTIES} properties")
    return encoded


def dump(encoded: Mapping[str, Encoded]) -> str:
    text = json.dumps(encoded, separators=(",", ":"))
    if len(text) > MAX_ENTITY_BYTES:
        raise bad_request("EntityTooLarge", "the entity exceeds 1 MiB")
    return text


def load(text: str) -> dict[str, Encoded]:
    return {name: (tag, value) for name, (tag, value) in json.loads(text).items()}


def decode_properties(encoded: Mapping[str, Encoded]) -> dict[str, Any]:
    return {name: decode_value(pair) for name, pair in encoded.items()}


def comparable(encoded: Encoded | None) -> Encoded | None:
    """What a filter compares: the value and its type, except that Int32, Int64 and
    Double are compared as numbers (Azure's ``Price eq 2`` matches a Double 2.0)."""
    if encoded is not None and encoded[0] in ("i", "d"):
        return "n", encoded[1]
    return encoded


def _valid_property_name(name: str) -> bool:
    """Azure: a C# identifier of at most 255 characters."""
    return isinstance(name, str) and name.isidentifier() and len(name) <= 255
