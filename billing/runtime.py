"""A role process's runtime, tuned once start-up is done and before its threads start."""

from __future__ import annotations

from shared.gc_tuning import collect_periodically, tune_collector
from shared.malloc_arenas import limit_malloc_arenas
from shared.settings import Settings


def tune_runtime(settings: Settings, *, event_loop: bool = False) -> None:
    """Bound malloc's arenas (:mod:`shared.malloc_arenas`), then freeze start-up's objects,
    set the collector and, in a process without an ``event_loop``, start its periodic full
    collections (:mod:`shared.gc_tuning`).

    A process that serves HTTP (the initiator, the all-in-one) runs asyncio's event loop,
    and a collection on another thread would finalize the loop's objects (transports,
    coroutines) off the loop's thread, which asyncio does not allow. It stays flat without.
    """
    limit_malloc_arenas(settings.malloc_arena_max)
    tune_collector(settings.gc_young_threshold)
    if not event_loop:
        collect_periodically(settings.gc_young_threshold)
