"""Python's cyclic garbage collector, set for a role process that streams millions of rows.

CPython collects its youngest generation every 700 net allocations of container objects,
and a full collection walks every live object. The roles allocate several container
objects per transaction (a CSV row, a transaction, a payload row), keep a chunk's worth
alive at a time, and run beside start-up's long-lived objects (modules, the FastAPI app,
the Azure SDKs), while almost nothing they make is ever part of a reference cycle
(reference counting frees it). So the collector runs every few hundred lines, moves each
chunk's rows through its generations, and now and then walks the whole heap, for nothing.

It costs about a tenth of the initiator's intake CPU a transaction, more in a larger heap
(``python -m bench.end_to_end`` runs the demo both ways).

:func:`tune_collector` does two things, once start-up has built what lives for the whole
process:

* ``gc.freeze()`` moves every object alive at that point into a permanent generation that
  no collection walks again;
* the youngest generation is collected every ``young_threshold`` allocations instead of
  700. Cycles are still found (a few megabytes later); the older generations keep their
  own thresholds.

``BILLING_GC_YOUNG_THRESHOLD=0`` keeps Python's defaults, e.g. to measure the difference.

The price is memory: each Azure SDK request leaves a few short-lived reference cycles (a
blob client's serializers, a queue receive's pager), which now wait longer to be freed,
and the allocator keeps what they took. A processor's worker process, which makes several
requests per chunk, settled about 20 MB higher on Azurite. :class:`FullCollections` gives
its loop a full collection every 10 s: it walks only what is not frozen (12 ms on average
in a worker, at most 21), and the worker settled about 4 MB higher instead (docs/soak.md).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: How often :class:`FullCollections` collects all the garbage.
FULL_COLLECTION_SECONDS = 10.0

DEFAULT_YOUNG_THRESHOLD = 100_000
"""Allocations between collections of the youngest generation: large enough that a chunk's
short-lived rows are freed by reference counting before a collection walks them."""


def tune_collector(young_threshold: int) -> None:
    """Freeze start-up's objects and collect the youngest generation every
    ``young_threshold`` allocations; ``0`` leaves the collector as Python set it."""
    if young_threshold <= 0:
        return
    gc.freeze()
    _young, older, oldest = gc.get_threshold()
    gc.set_threshold(young_threshold, older, oldest)
    log.info(
        "garbage collector: %s start-up objects frozen, youngest generation every %s allocations",
        f"{gc.get_freeze_count():,}",
        f"{young_threshold:,}",
    )


class FullCollections:
    """A full collection at most every ``period`` seconds, for a loop that wakes often anyway
    (:meth:`tick` on each turn); nothing while the collector keeps Python's settings."""

    def __init__(
        self,
        young_threshold: int,
        period: float = FULL_COLLECTION_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._period = period
        self._enabled = young_threshold > 0
        self._clock = clock
        self._last = clock()

    def tick(self) -> int | None:
        """Collect if a period has passed since the last collection; how many unreachable
        objects were found, or None if it was not time."""
        now = self._clock()
        if not self._enabled or now - self._last < self._period:
            return None
        self._last = now
        return gc.collect()
