"""Azure Storage's naming rules, ETags and errors, as the embedded backend needs them.

The embedded backend must accept exactly what Azure accepts, so a name that works locally
works in the cloud; it raises the azure-core exception types the SDKs raise.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

from azure.core.exceptions import HttpResponseError

# Queues and containers: 3-63 lowercase letters, digits and single hyphens, starting and
# ending with a letter or digit.
_QUEUE_OR_CONTAINER = re.compile(r"^(?=.{3,63}$)[a-z0-9](?:-?[a-z0-9])*$")
# Tables: 3-63 letters and digits, starting with a letter (azure-data-tables' own check).
_TABLE = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")
# The characters Azure forbids in PartitionKey and RowKey.
_FORBIDDEN_IN_KEY = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")
MAX_KEY_BYTES = 1024
MAX_BLOB_NAME_CHARS = 1024


class InvalidResourceNameError(HttpResponseError, ValueError):
    """A name Azure refuses (its 400 ``InvalidResourceName``).

    Raised when the queue, container or table object is made rather than at its first
    request as with Azure: a bad name is a bug, best found at once. It is both an
    ``HttpResponseError`` (what the SDKs raise) and a ``ValueError``.
    """

    def __init__(self, kind: str, name: str, rule: str) -> None:
        super().__init__(message=f"InvalidResourceName: invalid {kind} name {name!r}: {rule}")
        self.status_code = 400
        self.error_code = "InvalidResourceName"


_LOWERCASE_RULE = "3-63 lowercase letters, digits and single hyphens, not starting or ending in -"


def validate_queue_name(name: str) -> str:
    if not _QUEUE_OR_CONTAINER.match(name):
        raise InvalidResourceNameError("queue", name, _LOWERCASE_RULE)
    return name


def validate_container_name(name: str) -> str:
    if not _QUEUE_OR_CONTAINER.match(name):
        raise InvalidResourceNameError("container", name, _LOWERCASE_RULE)
    return name


def validate_table_name(name: str) -> str:
    if not _TABLE.match(name) or name.lower() == "tables":
        raise InvalidResourceNameError("table", name, "3-63 letters and digits, a letter first")
    return name


def validate_blob_name(name: str) -> str:
    if not 1 <= len(name) <= MAX_BLOB_NAME_CHARS:
        raise InvalidResourceNameError("blob", name, f"1-{MAX_BLOB_NAME_CHARS} characters")
    return name


def validate_entity_key(kind: str, key: str) -> str:
    """PartitionKey/RowKey: at most 1 KiB, none of ``/ \\ # ?`` or control characters."""
    if not isinstance(key, str):
        raise TypeError(f"{kind} must be a str, not {type(key).__name__}")
    if len(key.encode("utf-8")) > MAX_KEY_BYTES or _FORBIDDEN_IN_KEY.search(key):
        raise bad_request(
            "OutOfRangeInput",
            f"{kind} {key!r} is longer than 1 KiB or holds one of / \\ # ? or a control char",
        )
    return key


def new_etag() -> str:
    """An opaque, unique, quoted ETag in the shape Azure uses (``"0x8DC..."``)."""
    return f'"0x{secrets.token_hex(8).upper()}"'


def bad_request(code: str, message: str) -> HttpResponseError:
    """What Azure answers with a 400: an ``HttpResponseError`` carrying the service's code."""
    error = HttpResponseError(message=f"{code}: {message}")
    error.status_code = 400
    error.error_code = code  # type: ignore[attr-defined]
    return error


def utc_from_timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
