"""How many dequeue threads a queue depth deserves (docs/patterns.md).

The rule is a setting, not code: ``BILLING_SCALING_RULE``, a comma-separated list of
``depth:threads`` steps:

    "0:1,64:2,512:4"   → depth 0-63: 1 thread, 64-511: 2 threads, 512 and more: 4 threads

The first step must start at depth 0, depths must rise and thread counts must not fall (a
deeper queue never deserves fewer threads). The result is capped by the maximum number of
dequeue threads. The defaults are small because rating is CPU-bound and the sample runs
several processes per machine (one per core): threads only overlap storage I/O.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


class ScalingRuleError(ValueError):
    """A scaling rule string that cannot be parsed; the message says which step and why."""


@dataclass(frozen=True)
class ScalingRule:
    """Depth thresholds (ascending, the first 0) and the thread count from each one on."""

    thresholds: tuple[int, ...]
    threads: tuple[int, ...]
    max_threads: int

    @classmethod
    def parse(cls, text: str, *, max_threads: int) -> ScalingRule:
        """Parse ``"depth:threads,..."``; :class:`ScalingRuleError` on anything malformed."""
        if max_threads < 1:
            raise ScalingRuleError(f"max_threads must be >= 1, got {max_threads}")
        steps = [part.strip() for part in text.split(",") if part.strip()]
        if not steps:
            raise ScalingRuleError(f"scaling rule {text!r} has no 'depth:threads' steps")
        thresholds: list[int] = []
        threads: list[int] = []
        for step in steps:
            depth_text, sep, threads_text = step.partition(":")
            try:
                if not sep:
                    raise ValueError
                depth, count = int(depth_text), int(threads_text)
            except ValueError:
                raise ScalingRuleError(
                    f"scaling rule step {step!r} is not 'depth:threads' with two integers"
                ) from None
            if depth < 0 or count < 1:
                raise ScalingRuleError(
                    f"scaling rule step {step!r}: depth must be >= 0 and threads >= 1"
                )
            if thresholds and depth <= thresholds[-1]:
                raise ScalingRuleError(f"scaling rule {text!r}: depths must strictly rise")
            if threads and count < threads[-1]:
                raise ScalingRuleError(
                    f"scaling rule {text!r}: thread counts must not fall as depth rises"
                )
            thresholds.append(depth)
            threads.append(count)
        if thresholds[0] != 0:
            raise ScalingRuleError(f"scaling rule {text!r} must start at depth 0 (e.g. '0:1')")
        return cls(tuple(thresholds), tuple(threads), max_threads)

    @property
    def most_threads(self) -> int:
        """The most threads any depth deserves: with this many running, a depth changes
        nothing."""
        return min(self.threads[-1], self.max_threads)

    def optimal_threads(self, depth: int) -> int:
        """Threads for a queue depth: the step with the largest threshold ≤ depth, capped."""
        step = bisect.bisect_right(self.thresholds, max(depth, 0)) - 1
        return min(self.threads[step], self.max_threads)
