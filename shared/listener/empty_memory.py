"""Which queues answered "empty" lately, and for how long each is left alone.

Every receive is a billed request, empty ones included. A dequeue thread visits its queues
in priority order each round and receives from the first that has messages, so without a
memory a thread busy on one queue pays an empty receive on every queue ahead of it, every
round, while a batch is in flight. Rounds are far apart then (each handles up to 32
messages) and just as far apart when a thread idles in its back-off, so a memory counted in
seconds alone forgets between two rounds. A queue that answered empty ``n`` times in a row
is therefore skipped

* for ``recheck * 2**(n-1)`` seconds (up to ``cap``), so that fast rounds do not hammer it,
* and for the next ``2**(n-1)`` rounds, however long they take — but never longer than
  ``cap`` seconds after its last empty answer: work that arrives there without a trigger is
  still found within ``cap``.

So a queue that stays empty is asked about ``log2`` of the rounds it would have been, and at
least once per ``cap``. A receive that finds messages there, or a trigger naming it, starts
it over. Not thread-safe: the planner holds its lock around every call.
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
    #: skipped before this round number, as long as it is before ``cap_until``
    until_round: int
    cap_until: float

    def skips(self, now: float, round_number: int) -> bool:
        return now < self.until or (round_number < self.until_round and now < self.cap_until)


class EmptyMemory:
    def __init__(self, recheck: float, cap: float) -> None:
        if recheck < 0 or cap < recheck:
            raise ValueError("empty_recheck_max must not be below empty_recheck (both >= 0)")
        self._recheck = recheck
        self._cap = cap
        self._skips: dict[str, _Skip] = {}

    @property
    def enabled(self) -> bool:
        return self._recheck > 0

    def skip_seconds(self, streak: int) -> float:
        """How long, at least, a queue that answered empty ``streak`` times in a row is skipped."""
        return min(self._recheck * 2.0 ** min(max(streak, 1) - 1, _MAX_DOUBLINGS), self._cap)

    def empty(self, name: str, now: float, round_number: int) -> None:
        if not self.enabled:
            return
        previous = self._skips.get(name)
        streak = previous.streak + 1 if previous else 1
        self._skips[name] = _Skip(
            streak=streak,
            until=now + self.skip_seconds(streak),
            until_round=round_number + 2 ** min(streak - 1, _MAX_DOUBLINGS),
            cap_until=now + self._cap,
        )

    def skipped(self, now: float, round_number: int) -> set[str]:
        """The queues to leave out of round ``round_number``."""
        return {name for name, skip in self._skips.items() if skip.skips(now, round_number)}

    def forget(self, names: set[str] | None = None) -> None:
        """Start ``names`` (every queue if None) over: they are asked again at once."""
        if names is None:
            self._skips.clear()
            return
        for name in names:
            self._skips.pop(name, None)
