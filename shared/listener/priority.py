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
* **Empty memory** (:mod:`shared.listener.empty_memory`): a queue that answered "empty" is
  left out of the next busy rounds, longer the longer it stays empty, never longer than
  ``empty_recheck_max`` seconds; a receive that finds messages there, or a trigger naming it
  (:meth:`forget_empty`), makes it a candidate again at once. With ``idle_rescan`` (an
  owner whose new work announces itself), a queue is asked again only that long after its
  last empty answer, or once a message handed back to it is due (:meth:`expect_back`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Collection, Sequence

from shared.listener.empty_memory import EmptyMemory
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
        idle_rescan: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not sources:
            raise ValueError("a listener needs at least one queue")
        if share_every < 2:
            raise ValueError("share_every must be >= 2 (1 would invert the priorities)")
        ordered = sorted(sources, key=lambda s: (s.rank, s.partition))
        self._levels = [list(g) for _, g in itertools.groupby(ordered, key=lambda s: s.rank)]
        self._share_every = share_every
        self._empty = EmptyMemory(
            empty_recheck,
            empty_recheck if empty_recheck_max is None else empty_recheck_max,
            idle_rescan,
        )
        self._clock = clock
        self._lock = threading.Lock()
        #: queue → when it last gave messages or was announced by name
        self._active_at: dict[str, float] = {}
        self._round = 0

    @property
    def sources(self) -> list[QueueSource]:
        return [source for level in self._levels for source in level]

    def next_round(self) -> list[QueueSource]:
        """The queues to try this round, best first (recently empty ones left out)."""
        with self._lock:
            self._round += 1
            number = self._round
            skipped = self._empty.skipped(self._clock())
        order: list[QueueSource] = []
        for level, turn in self._level_order(number):
            start = turn % len(level)
            for source in level[start:] + level[:start]:
                if source.name not in skipped:
                    order.append(source)
        return order

    def mark_empty(self, source: QueueSource) -> None:
        """``source`` answered a receive with nothing: leave it out for a while, longer each
        time in a row (see :mod:`shared.listener.empty_memory`)."""
        with self._lock:
            self._empty.empty(source.name, self._clock())

    def mark_found(self, source: QueueSource) -> None:
        """``source`` gave messages: it is busy again, so its next empty answer starts over
        (and the round counts as busy for the other queues' skips)."""
        with self._lock:
            now = self._clock()
            self._empty.found(source.name, now)
            self._active_at[source.name] = now

    def active_within(self, source: QueueSource, seconds: float) -> bool:
        """Whether ``source`` gave messages, or work was announced on it by name, in the last
        ``seconds``."""
        with self._lock:
            active_at = self._active_at.get(source.name)
        return active_at is not None and self._clock() - active_at < seconds

    def mark_idle(self) -> None:
        """A round found no messages on any queue (the thread backs off now)."""
        with self._lock:
            self._empty.idle()

    def expect_back(self, queue_name: str, at: float) -> None:
        """A message was handed back to ``queue_name`` and is visible again at ``at``
        (this planner's clock): look for it then, whatever the queue's skip."""
        with self._lock:
            self._empty.expect(queue_name, at)

    def forget_empty(self, queue_names: Collection[str] | None = None) -> None:
        """New work was announced on ``queue_names`` (every queue if None): look at them
        again at once, and start their back-off over."""
        with self._lock:
            self._empty.forget(None if queue_names is None else set(queue_names))

    def mark_announced(self, queue_names: Collection[str]) -> None:
        """Work was announced on ``queue_names`` by name (a trigger, a work signal): for
        :meth:`active_within`, as if they had given messages now."""
        with self._lock:
            self._active_at.update(dict.fromkeys(queue_names, self._clock()))

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
