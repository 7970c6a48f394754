"""Whether this process's role is well: one probe, asked by every health signal.

A worker role registers its own probe once it runs (the processor: every worker process
alive; the controller: its listener running) and withdraws it when it starts to stop. The
health signals only read it: the liveness file (:mod:`shared.liveness`, for
``billing-healthcheck`` in compose) and ``GET /healthz`` (:mod:`shared.health_endpoint`,
for Container Apps' probes), so the two can never disagree.

Two questions, two answers. *Live* (:meth:`RoleHealth.status`): would a restart help? The
role's probe, and a process nearly out of file descriptors. *Ready*
(:meth:`RoleHealth.readiness`): can it do its work now? Live, and descriptors to spare, and
the role's optional readiness probe (the controller: its warehouse reachable).

    health = RoleHealth()                       # "starting": no probe yet
    health.register(lambda: None if ok() else "why not, in one line")
    health.status()                             # asks the probe now
    health.withdraw()                           # "stopping", for good
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shared.descriptors import LIVE_SHARE, READY_SHARE, descriptor_shortage

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
        self._ready_probe: Probe | None = None
        self._stopping = False

    def register(self, probe: Probe, ready_probe: Probe | None = None) -> None:
        """The role is running: from now on ``probe`` says whether it is well, and
        ``ready_probe`` (if any) whether it can do its work at the moment."""
        self._ready_probe = ready_probe
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
        reason = _ask(probe) or descriptor_shortage(LIVE_SHARE)
        return WELL if reason is None else Status("unwell", reason)

    def readiness(self) -> Status:
        """Live and able to work now: ``well`` or why not (``starting`` is not ready)."""
        live = self.status()
        if not live.well:
            return live
        ready_probe = self._ready_probe
        reason = descriptor_shortage(READY_SHARE) or (_ask(ready_probe) if ready_probe else None)
        return WELL if reason is None else Status("unwell", reason)


def first_reason(*probes: Probe) -> Probe:
    """One probe asking ``probes`` in turn: the first reason any gives, or None."""

    def probe() -> str | None:
        for each in probes:
            reason = each()
            if reason is not None:
                return reason
        return None

    return probe


def _ask(probe: Probe) -> str | None:
    try:
        reason = probe()
    except Exception as error:  # a failing probe means "unwell", never a failing signal
        reason = f"health probe failed: {type(error).__name__}: {error}"
    return None if reason is None else " ".join(reason.split())
