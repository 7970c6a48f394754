"""What Azure Storage accepts in a queue message and a receive, checked before any request.

Both backends apply these rules, so that a message the cloud would refuse is refused
locally too, with the same exception, and before a billed request is spent on it.
"""

from __future__ import annotations

import re

from azure.core.exceptions import HttpResponseError

from shared.storage.ports import (
    MAX_MESSAGES_PER_RECEIVE,
    MAX_QUEUE_MESSAGE_BYTES,
    MessageTooLargeError,
)

# Messages travel in an XML body: Azure refuses what XML 1.0 cannot carry (Azurite takes
# it, then a receive silently drops the message it cannot serialise back).
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def check_message(content: str) -> None:
    """Refuse a message Azure would refuse.

    Raises ``HttpResponseError`` (400 ``InvalidXmlDocument``, as Azure answers) for a
    character XML cannot carry, and :class:`MessageTooLargeError` above 64 KiB, counted as
    the service counts plain-text messages: UTF-8 bytes of the unescaped text.
    """
    if _NOT_XML_CHAR.search(content):
        error = HttpResponseError(
            message="InvalidXmlDocument: the message holds a character XML 1.0 cannot carry"
        )
        error.status_code = 400
        error.error_code = "InvalidXmlDocument"  # type: ignore[attr-defined]
        raise error
    size = len(content.encode("utf-8"))
    if size > MAX_QUEUE_MESSAGE_BYTES:
        raise MessageTooLargeError(
            f"queue message of {size} bytes exceeds {MAX_QUEUE_MESSAGE_BYTES}: "
            "store the payload as a blob and send its name"
        )


def check_batch_size(max_messages: int) -> None:
    """Azure hands out 1 to 32 messages per receive or peek."""
    if not 1 <= max_messages <= MAX_MESSAGES_PER_RECEIVE:
        raise ValueError(f"max_messages must be 1..{MAX_MESSAGES_PER_RECEIVE}: {max_messages}")
