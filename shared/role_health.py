"""Whether this process's role is well: one probe, asked by every health signal.

A worker role registers its own probe once it runs (the processor: every worker process
alive; the controller: its listener running) and withdraws it when it starts to stop. The
health signals only read it: the liveness file (:mod:`shared.liveness`, for
``billing-healthcheck`` in compose) and ``GET /healthz`` (:mod:`shared.health_endpoint`,
for Container Apps' probes), so the two can never disagree.

    health = RoleHealth()                       # "starting": no probe yet
    health.register(lambda: None if ok() else "why not, in one line")
    health.status()                             # asks the probe now
    health.withdraw()                           # "stopping", for good
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

#: A role's own check: ``None`` while it is well, else why not (one line).
Probe = Callable[[], str | None]

State = Literal["starting", "well", "unwell", "stopping"]


@dataclass(frozen=True)
class Status:
    state: State
    #: One line: ``ok``, ``starting``, ``stopping`` or why the role is unwell.
    reason: str

    @property
    def well(self) -> bool:
        """The role runs and its probe says it is well (not merely starting)."""
        return self.state == "well"


STARTING = Status("starting", "starting")
STOPPING = Status("stopping", "stopping")
WELL = Status("well", "ok")


class RoleHealth:
    """The probe of this process's role, from :meth:`register` to :meth:`withdraw`.

    Read from the signals' threads while the role's thread registers and withdraws: each
    is one attribute assignment, which another thread sees whole.
    """

    def __init__(self) -> None:
        self._probe: Probe | None = None
        self._stopping = False

    def register(self, probe: Probe) -> None:
        """The role is running: from now on ``probe`` says whether it is well."""
        self._probe = probe

    def withdraw(self) -> None:
        """The role is stopping: it is not well again in this process."""
        self._stopping = True

    def status(self) -> Status:
        """Asks the probe now (cheap enough for a probe every few seconds)."""
        if self._stopping:
            return STOPPING
        probe = self._probe
        if probe is None:
            return STARTING
        try:
            reason = probe()
        except Exception as error:  # a failing probe means "unwell", never a failing signal
            reason = f"health probe failed: {type(error).__name__}: {error}"
        return WELL if reason is None else Status("unwell", " ".join(reason.split()))
