"""Which queues answered "empty" lately, and for how long each is left alone.

Every receive is a billed request, empty ones included. A dequeue thread visits its queues
in priority order each round and receives from the first that has messages, so without a
memory a thread busy on one queue pays an empty receive on every queue ahead of it, every
round, while a batch is in flight. Such rounds are far apart (each handles up to 32
messages), so a memory counted in seconds alone forgets between two of them. A queue that
answered empty ``n`` times in a row is therefore skipped

* for ``recheck * 2**(n-1)`` seconds (up to ``cap``), so that fast rounds do not hammer it,
* and for the ``2**(n-1) - 1`` *busy* rounds (rounds that received messages from another
  queue) after the one it was asked in, however long they take — but never longer than
  ``cap`` seconds after its last empty answer: work that arrives there without a trigger is
  still found within ``cap``.

A round that found nothing anywhere ends the round skip: an idle thread's own back-off
already spaces its rounds, and skipping on top of it would only make work wait. So a queue
that stays empty beside a busy one is asked about ``log2`` of the rounds it was before, and
at least once per ``cap``. A receive that finds messages there, or a trigger naming it,
starts it over. Not thread-safe: the planner holds its lock around every call.
"""

from __future__ import annotations

from dataclasses import dataclass

#: 2**20 rounds or times any sane recheck is far past the cap; clamping keeps numbers small.
_MAX_DOUBLINGS = 20


@dataclass(frozen=True)
class _Skip:
    streak: int
    #: skipped before this time, whatever the rounds
    until: float
    #: skipped while fewer busy rounds than this were counted and no idle round came,
    #: as long as it is before ``cap_until``
    until_round: int
    idle_rounds: int
    cap_until: float

    def skips(self, now: float, busy_rounds: int, idle_rounds: int) -> bool:
        if now < self.until:
            return True
        within_rounds = busy_rounds < self.until_round and idle_rounds == self.idle_rounds
        return within_rounds and now < self.cap_until


class EmptyMemory:
    def __init__(self, recheck: float, cap: float) -> None:
        if recheck < 0 or cap < recheck:
            raise ValueError("empty_recheck_max must not be below empty_recheck (both >= 0)")
        self._recheck = recheck
        self._cap = cap
        self._skips: dict[str, _Skip] = {}
        self._busy_rounds = 0
        self._idle_rounds = 0

    @property
    def enabled(self) -> bool:
        return self._recheck > 0

    def skip_seconds(self, streak: int) -> float:
        """How long, at least, a queue that answered empty ``streak`` times in a row is skipped."""
        return min(self._recheck * 2.0 ** min(max(streak, 1) - 1, _MAX_DOUBLINGS), self._cap)

    def empty(self, name: str, now: float) -> None:
        if not self.enabled:
            return
        previous = self._skips.get(name)
        streak = previous.streak + 1 if previous else 1
        self._skips[name] = _Skip(
            streak=streak,
            until=now + self.skip_seconds(streak),
            # + 2**(n-1): the round this answer came in counts as busy once it finds messages
            until_round=self._busy_rounds + 2 ** min(streak - 1, _MAX_DOUBLINGS),
            idle_rounds=self._idle_rounds,
            cap_until=now + self._cap,
        )

    def found(self, name: str) -> None:
        """``name`` gave messages: one busy round more, and ``name`` starts over."""
        self._busy_rounds += 1
        self._skips.pop(name, None)

    def idle(self) -> None:
        """A round found no messages anywhere: the round skips end."""
        self._idle_rounds += 1

    def skipped(self, now: float) -> set[str]:
        """The queues to leave out of a round starting ``now``."""
        busy, idle = self._busy_rounds, self._idle_rounds
        return {name for name, skip in self._skips.items() if skip.skips(now, busy, idle)}

    def forget(self, names: set[str] | None = None) -> None:
        """Start ``names`` (every queue if None) over: they are asked again at once."""
        if names is None:
            self._skips.clear()
            return
        for name in names:
            self._skips.pop(name, None)
