"""Publishing an accepted batch in an order that survives a crash at any point.

The steps are :data:`STEPS`, run by :class:`Publisher`, each durable before the next; why
that order is safe is docs/intake.md, "Crash safety: the order of publishing". What a crash
leaves behind is removed by :func:`sweep_orphans` (at every initiator start, then every few
minutes).
"""

from initiator.publishing.outcome import IntakeOutcomeUnknownError
from initiator.publishing.publisher import (
    STEPS,
    BatchIntent,
    FaultHook,
    Publication,
    Publisher,
)
from initiator.publishing.sweeper import OrphanSweeper, is_orphan, sweep_orphans

__all__ = [
    "STEPS",
    "BatchIntent",
    "FaultHook",
    "IntakeOutcomeUnknownError",
    "OrphanSweeper",
    "Publication",
    "Publisher",
    "is_orphan",
    "sweep_orphans",
]
