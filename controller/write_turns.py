"""On SQLite, a controller's handler threads take turns: decode a result, then write it.

SQLite lets one connection write at a time. The handlers of a controller that want to write
while another does wait in SQLite's busy handler, which sleeps between tries (1, 2, 5, …
up to 100 ms), so the write lock lies idle after each commit until a sleeper wakes. A py-spy
timeline of the controller during a 500,000-transaction demo found, in 164 of 629 samples
(26 %), a handler waiting in ``BEGIN IMMEDIATE`` while no handler held the lock or decoded
a result; with the turns, in 2 of 520. A lock in the process hands the turn over at once.

The turn covers decoding the result as well as writing it. The bulk insert
(:mod:`controller.charge_loader`) used to give the GIL up around every row's
``sqlite3_step`` and take it back for the next row's values, so a handler decoding at the
same time (msgspec: work that holds the GIL) made the writer wait for the GIL row after
row; a lock around the write alone, tried first, left that overlap in place: the writes ran
slower and the reduce was no faster. The insert now steps once per two thousand rows
(:mod:`shared.warehouse.sqlite_rows`), and the turns still pay: the reduce of 200,000
transactions took 1.60 s with them and 1.72 s without (``bench.controllers``, session 14).
Taken in turn, decoding and writing never compete; what still overlaps is what waits on I/O:
receiving, fetching the result blob, deleting the message.

Measured (``bench/README.md``): on the reduce alone, every result already waiting, the
turns gain from nothing to a third (``bench.controllers``, 0.95-1.32x); in the pipeline,
where results arrive while the processors rate on the same cores, ``bench.write_turns`` ran
the demo 1.06x as fast (1.09x after the 202), medians of five alternating pairs.

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
