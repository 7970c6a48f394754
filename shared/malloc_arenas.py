"""glibc's malloc arenas, limited for a role process that runs for months.

glibc gives each thread that meets another in ``malloc`` an arena of its own, up to eight
per core, and keeps what each arena once held: memory freed in one arena is not reused by
a thread of another, and an arena's free space is returned to the system only from its top.
A role's threads allocate in turns (the GIL) except inside C code that lets go of it, such
as SQLite stepping a statement, so extra arenas buy little speed here and cost memory that
never comes back: over 10,000 one-row batches on the embedded backend
(``python -m bench.soak``) the controller held 18-21 MB of free space across five arenas
with glibc's default, and grew half as much limited to two (decision 0090, side by side;
docs/soak.md has the current figures).

:func:`limit_malloc_arenas` calls ``mallopt(M_ARENA_MAX, n)`` through ``ctypes``, which
bounds the arenas created from then on, so a role calls it before it starts its threads.
It is glibc's own knob, the one the ``MALLOC_ARENA_MAX`` environment variable sets; calling
it from the process means a role started any way (a terminal, compose, Container Apps) gets
it. Elsewhere (macOS, musl-based images, Windows) there is no such knob and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

#: ``M_ARENA_MAX`` in glibc's ``malloc.h``.
M_ARENA_MAX = -8


def limit_malloc_arenas(arena_max: int) -> bool:
    """Let glibc's malloc create at most ``arena_max`` arenas; whether it took the limit.

    ``0`` keeps glibc's own default (eight per core), as does a C library that is not
    glibc.
    """
    if arena_max <= 0:
        return False
    libc = _glibc()
    if libc is None:
        return False
    taken = bool(libc.mallopt(M_ARENA_MAX, arena_max))
    if not taken:
        log.warning("glibc refused mallopt(M_ARENA_MAX, %d)", arena_max)
    return taken


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: a lookup that fails elsewhere
    except (OSError, AttributeError):
        return None
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    return libc
