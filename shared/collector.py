"""Python's cyclic garbage collector, set for a role process that streams millions of rows.

CPython collects its youngest generation every 700 net allocations of container objects,
and a full collection walks every live object. The roles allocate several container
objects per transaction (a CSV row, a transaction, a payload row), keep a chunk's worth
alive at a time, and run beside start-up's few hundred thousand long-lived objects
(modules, the FastAPI app, the Azure SDKs). So the collector ran every few hundred lines,
moved each chunk's rows through its generations, and now and then walked the whole heap,
while almost nothing the roles make is ever part of a reference cycle (reference counting
frees it). Measured on the intake of 200,000 transactions (parse, control totals,
payload documents, compression), it was 40-55 % of the initiator's CPU:
``python -m bench.end_to_end`` prints the roles' CPU per transaction both ways.

:func:`tune_collector` does two things, once start-up has built what lives for the whole
process:

* ``gc.freeze()`` moves every object alive at that point into a permanent generation that
  no collection walks again;
* the youngest generation is collected every ``young_threshold`` allocations instead of
  700. Cycles are still found (a few megabytes later); the older generations keep their
  own thresholds.

``BILLING_GC_YOUNG_THRESHOLD=0`` keeps Python's defaults, e.g. to measure the difference.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)

DEFAULT_YOUNG_THRESHOLD = 100_000
"""Allocations between collections of the youngest generation. On that intake, four runs
each: 4.7-6.4 µs a transaction at 100,000 with the freeze, 4.4-8.1 with the collector off,
5.1-8.5 at 20,000, 8.5-12.8 with Python's defaults."""


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
