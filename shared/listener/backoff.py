"""Randomized exponential back-off on an empty queue (docs/patterns.md).

Every poll of an empty queue is a billed storage transaction, so a dequeue thread that finds
nothing waits longer and longer before it asks again:

    delay(n) = min(min_idle + (2**n - 1) * uniform(0.8, 1.2) * delta, max_idle)

where ``n`` is the number of empty receives in a row. The jitter keeps the threads of many
instances from polling in lock-step. Once the delay reaches ``max_idle`` the thread is
idle enough to retire (the engine decides whether it may).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

#: Past this exponent the delay is at the cap for any sane settings (2**64 * 1 ms is
#: centuries); clamping keeps the float arithmetic from overflowing on very long idles.
_MAX_EXPONENT = 64

#: ``uniform(low, high)``: the source of jitter, injectable so tests can pin it.
UniformSource = Callable[[float, float], float]


@dataclass(frozen=True)
class Backoff:
    """The back-off curve; times in seconds."""

    min_idle: float
    delta: float
    max_idle: float
    uniform: UniformSource = field(default=random.uniform, compare=False, repr=False)

    #: the jitter range: ±20 % around ``delta``
    JITTER_LOW = 0.8
    JITTER_HIGH = 1.2

    def __post_init__(self) -> None:
        if self.min_idle < 0 or self.delta <= 0 or self.max_idle <= 0:
            raise ValueError("back-off times must be positive (min_idle may be 0)")
        if self.min_idle > self.max_idle:
            raise ValueError("min_idle must not exceed max_idle")

    def delay(self, idle_count: int) -> float:
        """How long to sleep after ``idle_count`` empty receives in a row (0 → ``min_idle``)."""
        if idle_count < 0:
            raise ValueError("idle_count must be >= 0")
        growth = 2.0 ** min(idle_count, _MAX_EXPONENT) - 1.0
        jitter = self.uniform(self.JITTER_LOW, self.JITTER_HIGH)
        return min(self.min_idle + growth * jitter * self.delta, self.max_idle)

    def at_cap(self, delay: float) -> bool:
        """True once the delay has reached ``max_idle``: the thread is idle enough to retire."""
        return delay >= self.max_idle

    def bounds(self, idle_count: int) -> tuple[float, float]:
        """The least and greatest delay the formula allows for ``idle_count`` (for tests/docs)."""
        growth = 2.0 ** min(idle_count, _MAX_EXPONENT) - 1.0
        low = self.min_idle + growth * self.JITTER_LOW * self.delta
        high = self.min_idle + growth * self.JITTER_HIGH * self.delta
        return min(low, self.max_idle), min(high, self.max_idle)
