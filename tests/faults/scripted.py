"""A fault plan that injects exactly the faults a test lists, in order, then none."""

from __future__ import annotations

import threading
from collections import deque

from shared.faults.plan import Fault, FaultKind, FaultPlan
from shared.faults.spec import FaultSpec

LOST = Fault(FaultKind.LOST_RESPONSE)
TIMEOUT = Fault(FaultKind.TIMEOUT)


def status(code: int) -> Fault:
    return Fault(FaultKind.STATUS, code)


class ScriptedPlan(FaultPlan):
    """``plan.next(LOST, None, TIMEOUT)``: the next three attempts get these; then all pass.

    ``attempts`` counts the draws, i.e. the requests the client really tried."""

    def __init__(self) -> None:
        super().__init__(FaultSpec(), "scripted")
        self._script: deque[Fault | None] = deque()
        self._script_lock = threading.Lock()
        self.attempts = 0

    def next(self, *faults: Fault | None) -> None:
        with self._script_lock:
            self._script.extend(faults)
            self.attempts = 0

    def draw(self) -> Fault | None:
        with self._script_lock:
            self.attempts += 1
            return self._script.popleft() if self._script else None
