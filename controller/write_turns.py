"""On SQLite, a controller's handler threads take turns: decode a result, then write it.

SQLite lets one connection write at a time. The handlers of a controller that want to write
while another does wait in SQLite's busy handler, which sleeps between tries (1, 2, 5, …
up to 100 ms), so the write lock lies idle after each commit until a sleeper wakes. A profile
of the controller during a large demo finds a quarter of its samples waiting in ``BEGIN
IMMEDIATE`` while no handler holds the lock or decodes a result; a lock in the process
hands the turn over at once.

The turn covers decoding the result as well as writing it: decoding (msgspec) holds the
GIL, so a handler decoding beside a writer makes the writer wait for the GIL between the
steps of its insert. Taken in turn, decoding and writing never compete; what still overlaps
is what waits on I/O: receiving, fetching the result blob, deleting the message.
``BILLING_CONTROLLER_WRITE_TURNS=false`` lets the handlers meet in the busy handler, to
compare (``python -m bench.end_to_end`` with it set and unset).

On PostgreSQL the handlers do not take turns: the server does most of a write's work in its
own process, and several transactions loading at once is what it is built for.

The turn is per process. Controllers in other processes sharing one SQLite file still meet
in SQLite's busy handler, which keeps them correct, just not as quick.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext

from sqlalchemy import Engine


def write_turns(engine: Engine, *, enabled: bool = True) -> AbstractContextManager[object]:
    """What a handler holds while it decodes and writes a result into ``engine``'s warehouse.

    A lock on SQLite (one writer at a time anyway), nothing elsewhere or when not
    ``enabled`` (``BILLING_CONTROLLER_WRITE_TURNS=false``, to measure the difference).
    Reusable: every handler of a worker enters the same object.
    """
    if enabled and engine.dialect.name == "sqlite":
        return threading.Lock()
    return nullcontext()
