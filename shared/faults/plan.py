"""A fault plan: for each request, seeded draws decide whether it fails, and how.

A plan is one stream of draws: ``plan.draw()`` is called once per attempt (a retry draws
again) and answers ``None`` (the request goes through) or a :class:`Fault`. The injectors
(:mod:`shared.faults.transport` for the Azure SDKs, :mod:`shared.faults.storage` for the
embedded backend, :mod:`shared.faults.bus` for the trigger bus) act it out.

Draws are thread-safe. Each plan seeds its own generator from the spec's seed, its label
and how many plans with that label this process made before, so two clients of one process
do not fail in lock-step, and a single-threaded run is reproducible.
"""

from __future__ import annotations

import enum
import itertools
import logging
import random
import threading
from collections import Counter
from dataclasses import dataclass

from shared.faults.spec import FaultSpec

log = logging.getLogger(__name__)


class FaultKind(enum.Enum):
    #: an error status (500, 503 or 429) without the request being applied
    STATUS = "status"
    #: no answer before the client's timeout, and the request never reached the server
    TIMEOUT = "timeout"
    #: the server applied the request, then the response was lost on its way back
    LOST_RESPONSE = "lose"


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    status: int = 0  # for STATUS

    def __str__(self) -> str:
        return f"{self.status}" if self.kind is FaultKind.STATUS else self.kind.value


_made: Counter[str] = Counter()
_made_lock = threading.Lock()


class FaultPlan:
    """The draws of one injector (a client, an embedded account, a bus)."""

    def __init__(self, spec: FaultSpec, label: str) -> None:
        self.spec = spec
        self.label = label
        with _made_lock:
            nth = _made[label]
            _made[label] += 1
        self._random = random.Random(f"{spec.seed}:{label}:{nth}")
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._requests = itertools.count()

    def draw(self) -> Fault | None:
        """The fault for the next attempt, or ``None`` to let it through."""
        spec = self.spec
        with self._lock:
            next(self._requests)
            roll = self._random.random()
            status = self._random.choice(spec.statuses)
            if roll < spec.fail:
                fault: Fault | None = Fault(FaultKind.STATUS, status)
            elif roll < spec.fail + spec.timeout:
                fault = Fault(FaultKind.TIMEOUT)
            elif roll < spec.fail + spec.timeout + spec.lose:
                fault = Fault(FaultKind.LOST_RESPONSE)
            else:
                fault = None
            if fault is not None:
                self._counts[str(fault)] += 1
        return fault

    def injected(self) -> dict[str, int]:
        """How many faults of each kind this plan injected so far (``{"503": 4, "lose": 1}``)."""
        with self._lock:
            return dict(self._counts)


def announce(spec: FaultSpec, what: str) -> None:
    """The loud line every process under a fault plan logs, once per injector it opens."""
    log.warning("FAULT INJECTION ON for %s: BILLING_FAULTS=%s", what, spec.describe())
