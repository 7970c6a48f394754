"""A role process's runtime, tuned once start-up is done and before its threads start."""

from __future__ import annotations

from shared.gc_tuning import collect_periodically, tune_collector
from shared.malloc_arenas import limit_malloc_arenas
from shared.settings import Settings


def tune_runtime(settings: Settings) -> None:
    """Bound malloc's arenas (:mod:`shared.malloc_arenas`), then freeze start-up's objects,
    set the collector and start its periodic full collections (:mod:`shared.gc_tuning`)."""
    limit_malloc_arenas(settings.malloc_arena_max)
    tune_collector(settings.gc_young_threshold)
    collect_periodically(settings.gc_young_threshold)
