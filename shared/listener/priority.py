"""The order in which a dequeue thread visits its queues (docs/patterns.md).

Each *round* a dequeue thread asks :meth:`PriorityPlanner.next_round` for an ordered list
of queues and receives from the first one that has messages.

* **Priority**: high before normal before low.
* **Partitions**: within a priority, the partition a round starts at rotates, so
  every partition is read and none is favoured.
* **Anti-starvation: a minimum share.** Every ``share_every``-th round is a *share round*
  that tries one lower priority first, cycling from the lowest upwards (low, normal, low,
  normal, …), then falls back to the usual order. So under a steady load of every priority,
  high gets ``(N-1)/N`` of the rounds and each lower priority at least
  ``1 / (N * (levels - 1))`` — with N = 8 and three levels, 1 round in 16 each. A share
  round whose favoured queues are empty costs nothing extra: it serves the usual order.
  Chosen over aging because it needs no per-message timestamps and its bound is easy to
  state and test.
* **Empty memory**: a queue that just answered "empty" is skipped by every thread for a
  while, so a thread serving one queue does not pay an empty receive on every other
  partition and priority each round (every receive is a billed request). The skip doubles
  with each empty answer in a row — ``empty_recheck``, twice that, four times, … — up to
  ``empty_recheck_max``, so a queue that stays empty while a batch is in flight costs a few
  receives, not one per round; and no queue is skipped for longer than the cap, so work that
  arrives without a trigger is still found within it. A receive that finds messages, or a
  trigger naming the queue (:meth:`forget_empty`), makes it a candidate again at once.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Collection, Sequence

from shared.listener.source import QueueSource


class PriorityPlanner:
    """Shared by the dequeue threads of one listener; thread-safe."""

    def __init__(
        self,
        sources: Sequence[QueueSource],
        *,
        share_every: int = 8,
        empty_recheck: float = 0.0,
        empty_recheck_max: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not sources:
            raise ValueError("a listener needs at least one queue")
        if share_every < 2:
            raise ValueError("share_every must be >= 2 (1 would invert the priorities)")
        cap = empty_recheck if empty_recheck_max is None else empty_recheck_max
        if cap < empty_recheck:
            raise ValueError("empty_recheck_max must not be below empty_recheck")
        ordered = sorted(sources, key=lambda s: (s.rank, s.partition))
        self._levels = [list(g) for _, g in itertools.groupby(ordered, key=lambda s: s.rank)]
        self._share_every = share_every
        self._empty_recheck = empty_recheck
        self._empty_recheck_max = cap
        self._clock = clock
        self._lock = threading.Lock()
        self._round = 0
        self._empty_until: dict[str, float] = {}
        #: queue name → empty answers in a row (reset by messages or a trigger)
        self._empty_streak: dict[str, int] = {}

    @property
    def sources(self) -> list[QueueSource]:
        return [source for level in self._levels for source in level]

    def next_round(self) -> list[QueueSource]:
        """The queues to try this round, best first (recently empty ones left out)."""
        with self._lock:
            self._round += 1
            number = self._round
            now = self._clock()
            empty_until = dict(self._empty_until)
        order: list[QueueSource] = []
        for level, turn in self._level_order(number):
            start = turn % len(level)
            for source in level[start:] + level[:start]:
                if empty_until.get(source.name, 0.0) <= now:
                    order.append(source)
        return order

    def mark_empty(self, source: QueueSource) -> None:
        """``source`` answered a receive with nothing: skip it for a while, longer each time
        in a row, never longer than ``empty_recheck_max``."""
        if self._empty_recheck <= 0:
            return
        with self._lock:
            streak = self._empty_streak.get(source.name, 0) + 1
            self._empty_streak[source.name] = streak
            self._empty_until[source.name] = self._clock() + self.skip_for(streak)

    def mark_found(self, source: QueueSource) -> None:
        """``source`` gave messages: it is busy again, so its next empty answer starts over."""
        with self._lock:
            self._empty_streak.pop(source.name, None)
            self._empty_until.pop(source.name, None)

    def skip_for(self, streak: int) -> float:
        """How long a queue that answered empty ``streak`` times in a row is skipped."""
        # 2**20 times any sane base is far past the cap; clamping keeps the float finite.
        growth = 2.0 ** min(max(streak, 1) - 1, 20)
        return min(self._empty_recheck * growth, self._empty_recheck_max)

    def forget_empty(self, queue_names: Collection[str] | None = None) -> None:
        """New work was announced on ``queue_names`` (every queue if None): look at them
        again at once, and start their back-off over."""
        with self._lock:
            if queue_names is None:
                self._empty_until.clear()
                self._empty_streak.clear()
                return
            for name in queue_names:
                self._empty_until.pop(name, None)
                self._empty_streak.pop(name, None)

    def _level_order(self, number: int) -> list[tuple[list[QueueSource], int]]:
        """The levels in this round's order, each with its partition-rotation turn.

        Regular and share rounds rotate on their own counters, so that share rounds (every
        Nth) do not always land on the same partition, nor skip one in the regular rotation.
        """
        if len(self._levels) == 1:
            return [(self._levels[0], number)]
        share_round, offset = divmod(number, self._share_every)
        if offset:
            regular_turn = number - share_round
            return [(level, regular_turn) for level in self._levels]
        lower = self._levels[1:]
        favoured = lower[-1 - (share_round - 1) % len(lower)]
        favoured_turn = (share_round - 1) // len(lower)
        regular_turn = number - share_round
        return [(favoured, favoured_turn)] + [
            (level, regular_turn) for level in self._levels if level is not favoured
        ]
