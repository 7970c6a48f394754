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
starts it over.

**A listener whose new work announces itself** (``idle_rescan``, set by an owner with a
push trigger and a work signal) asks a queue that answered empty again only
``idle_rescan`` seconds after that answer, in every round: new work there comes with a
trigger naming the queue (:meth:`EmptyMemory.forget`), and what comes back by itself (a
crashed consumer's messages whose lease ran out) is found that long after. Messages this
listener handed back are looked for when they are due (:meth:`EmptyMemory.expect`).
Without it, an idle thread's back-off and the doubling skip run out together, so every
idle round asked every queue again (twelve receives a round), and a thread rating a batch
on the normal queues asked the empty high ones in one round of two (with two processors,
24 of the 184 requests of ``bench.celery_reference``'s window). The price: work put on a
queue without a trigger (a lost one) is found within ``idle_rescan`` by a busy thread as by
an idle one, not within ``cap``. Not thread-safe: the planner holds its lock around every
call.
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
    def __init__(self, recheck: float, cap: float, idle_rescan: float | None = None) -> None:
        if recheck < 0 or cap < recheck:
            raise ValueError("empty_recheck_max must not be below empty_recheck (both >= 0)")
        if idle_rescan is not None and idle_rescan <= 0:
            raise ValueError("idle_rescan must be positive (None: idle rounds ask as usual)")
        self._recheck = recheck
        self._cap = cap
        self._idle_rescan = idle_rescan
        self._skips: dict[str, _Skip] = {}
        #: when each queue last answered empty (what idle rounds go by)
        self._empty_at: dict[str, float] = {}
        #: when messages handed back to each queue are due to be visible again
        self._due: dict[str, list[float]] = {}
        self._busy_rounds = 0
        self._idle_rounds = 0

    @property
    def enabled(self) -> bool:
        return self._recheck > 0

    def skip_seconds(self, streak: int) -> float:
        """How long, at least, a queue that answered empty ``streak`` times in a row is skipped."""
        return min(self._recheck * 2.0 ** min(max(streak, 1) - 1, _MAX_DOUBLINGS), self._cap)

    def empty(self, name: str, now: float) -> None:
        self._asked(name, now)
        self._empty_at[name] = now
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

    def found(self, name: str, now: float) -> None:
        """``name`` gave messages: one busy round more, and ``name`` starts over."""
        self._asked(name, now)
        self._busy_rounds += 1
        self._skips.pop(name, None)
        self._empty_at.pop(name, None)

    def expect(self, name: str, at: float) -> None:
        """A message was handed back to ``name``, visible again at ``at``: however long
        its skip, ``name`` is asked in the first round from then on."""
        self._due.setdefault(name, []).append(at)

    def _asked(self, name: str, now: float) -> None:
        """``name`` was just received from: what was due by now has been looked for."""
        due = self._due.get(name)
        if due is None:
            return
        later = [at for at in due if at > now]
        if later:
            self._due[name] = later
        else:
            del self._due[name]

    def idle(self) -> None:
        """A round found no messages anywhere: the round skips end."""
        self._idle_rounds += 1

    def skipped(self, now: float) -> set[str]:
        """The queues to leave out of a round starting ``now``."""
        busy, idle_rounds = self._busy_rounds, self._idle_rounds
        skipped = {name for name, skip in self._skips.items() if skip.skips(now, busy, idle_rounds)}
        if self._idle_rescan is not None:
            rescan_from = now - self._idle_rescan
            skipped.update(name for name, at in self._empty_at.items() if at > rescan_from)
        return {name for name in skipped if not self._is_due(name, now)}

    def _is_due(self, name: str, now: float) -> bool:
        return any(at <= now for at in self._due.get(name, ()))

    def forget(self, names: set[str] | None = None) -> None:
        """Start ``names`` (every queue if None) over: they are asked again at once."""
        if names is None:
            self._skips.clear()
            self._empty_at.clear()
            return
        for name in names:
            self._skips.pop(name, None)
            self._empty_at.pop(name, None)
