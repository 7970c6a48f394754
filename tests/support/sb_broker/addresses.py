"""What a link address names: the CBS node, an entity's ``$management`` node, or an entity.

The SDK addresses entities with full URIs even without TLS (``amqps://host:port/<topic>``,
``amqps://host:port/<topic>/Subscriptions/<sub>``, a ``/$DeadLetterQueue`` suffix for the
dead-letter sub-queue, ``/$management`` for request-response), and the CBS node as plain
``$cbs``. Names keep their case here; the namespace compares them case-insensitively, as
Service Bus does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from urllib.parse import urlsplit

CBS_NODE = "$cbs"
MANAGEMENT_NODE = "$management"
DEAD_LETTER_QUEUE = "$deadletterqueue"


class Kind(Enum):
    CBS = "cbs"
    MANAGEMENT = "management"
    ENTITY = "entity"


@dataclass(frozen=True)
class EntityPath:
    """A topic, one of its subscriptions, or that subscription's dead-letter sub-queue."""

    topic: str
    subscription: str | None = None
    dead_letter: bool = False

    def __str__(self) -> str:
        if self.subscription is None:
            return self.topic
        suffix = "/$DeadLetterQueue" if self.dead_letter else ""
        return f"{self.topic}/Subscriptions/{self.subscription}{suffix}"


@dataclass(frozen=True)
class Address:
    kind: Kind
    entity: EntityPath | None = None


def parse_address(address: str | None) -> Address | None:
    """The node an address names, or ``None`` if it names nothing this broker knows."""
    if not address:
        return None
    if address == CBS_NODE:
        return Address(Kind.CBS)
    path = urlsplit(address).path if "://" in address else address
    segments = [s for s in path.split("/") if s]
    kind = Kind.ENTITY
    if segments and segments[-1].lower() == MANAGEMENT_NODE:
        kind = Kind.MANAGEMENT
        segments = segments[:-1]
    entity = _entity_path(segments)
    return None if entity is None else Address(kind, entity)


def _entity_path(segments: list[str]) -> EntityPath | None:
    lowered = [s.lower() for s in segments]
    if len(segments) == 1:
        return EntityPath(segments[0])
    if len(segments) in (3, 4) and lowered[1] == "subscriptions":
        if len(segments) == 4 and lowered[3] != DEAD_LETTER_QUEUE:
            return None
        return EntityPath(segments[0], segments[2], dead_letter=len(segments) == 4)
    return None
