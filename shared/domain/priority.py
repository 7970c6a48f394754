"""A batch's priority: high is served before normal, normal before low."""

from __future__ import annotations

from typing import Literal

Priority = Literal["high", "normal", "low"]
#: Best first: a queue's rank is its priority's index here.
PRIORITIES: tuple[Priority, ...] = ("high", "normal", "low")
