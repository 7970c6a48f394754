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

The price is memory: whatever does end in a reference cycle (each Azure SDK request leaves a
few: a blob client's serializers, a queue receive's pager) waits far longer to be freed, and
the allocator keeps the pages it took. A processor's worker process settled about 20 MB higher
on Azurite; the controller, over thousands of one-row batches, ratcheted up by the garbage it
let pile up between full collections. :func:`collect_periodically` runs a full collection
every 10 s on a thread of its own: it walks only what is not frozen (about 12 ms in a worker),
and the roles without an event loop stay flat (docs/soak.md; ``billing.runtime`` says which).
"""

from __future__ import annotations

import gc
import logging
import threading
import time

log = logging.getLogger(__name__)

#: How often :func:`collect_periodically` collects all the garbage.
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


def collect_periodically(
    young_threshold: int, period: float = FULL_COLLECTION_SECONDS
) -> threading.Thread | None:
    """Start a daemon thread that collects all the garbage every ``period`` seconds, or
    nothing where ``young_threshold`` is ``0`` (Python's own settings collect often enough).

    A thread rather than a turn of a loop: the controller's main thread only waits for a
    signal. Not for a process running asyncio's event loop: the collection finalizes what it
    frees on this thread, and the loop's objects must be finalized on the loop's own."""
    if young_threshold <= 0:
        return None

    def collect() -> None:
        while True:
            time.sleep(period)
            gc.collect()

    thread = threading.Thread(target=collect, name="full-garbage-collections", daemon=True)
    thread.start()
    return thread
