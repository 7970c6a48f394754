"""Unique resource names, so that tests never share a queue, container or table."""

from __future__ import annotations

import uuid


def unique_name(prefix: str = "t") -> str:
    """A name valid for a queue, a container and a table alike: a letter, then 3-63
    lowercase letters and digits (tables allow no hyphen, queues no capital)."""
    if not (prefix.isalnum() and prefix.islower() and prefix[0].isalpha()):
        raise ValueError(f"prefix must be lowercase letters and digits: {prefix!r}")
    return f"{prefix}{uuid.uuid4().hex[:16]}"
