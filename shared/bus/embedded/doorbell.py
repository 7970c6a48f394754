"""Waking a blocked receiver in another process within milliseconds, without polling.

The choice: one named FIFO per subscription, in the bus folder. A receiver opens it
read-write and non-blocking, then sleeps in ``select`` on it; a publisher, after its
transaction committed, opens it write-only and non-blocking and writes one byte. Why this:

* the kernel wakes the sleeper at once (well under a millisecond), and an idle receiver
  costs nothing: no SQLite query every few milliseconds;
* no wake-up is lost: the receiver holds the FIFO open from the moment it subscribes, so a
  byte written between its last look at the database and its ``select`` waits in the
  pipe and ends the next ``select`` immediately;
* a publisher never blocks: with no receiver the open fails (``ENXIO``) and with a full
  pipe the write fails (``EAGAIN``), and both mean "nobody needs another nudge";
* opening the FIFO read-write (Linux and macOS allow it) keeps a writer attached, so the
  receiver never sees end-of-file when publishers come and go.

It is a hint, not the message: the subscription's rows in SQLite are the truth, and a
receiver also looks at them on a slow timer (:data:`SLOW_POLL_SECONDS`) in case a byte
went to another receiver of the same subscription. Where FIFOs do not exist (Windows),
that timer is all there is, made short (:data:`FALLBACK_POLL_SECONDS`).

**Waking the receiver from its own process** (to close it): not through the FIFO, whose
byte another receiver of the subscription could eat, but through a private pipe in the same
``select`` (:meth:`Doorbell.wake`). Its file descriptors are closed only once no thread
waits on them (:meth:`Doorbell.close` is for the last user): closing a descriptor under a
``select`` wakes nobody, and its number could be reused by the next file opened.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import selectors
import threading
from pathlib import Path
from urllib.parse import quote

#: How often a receiver also looks at the database while nothing rang.
SLOW_POLL_SECONDS = 1.0
#: The same where there are no FIFOs, short enough to meet a 100 ms wake-up.
FALLBACK_POLL_SECONDS = 0.05
HAS_FIFOS = hasattr(os, "mkfifo")


def doorbell_path(folder: Path, topic: str, subscription: str) -> Path:
    """The FIFO of one subscription: a readable name, or a digest when that is too long."""
    name = f"{quote(topic, safe='')}--{quote(subscription, safe='')}"
    if len(name) > 200:
        name = hashlib.sha256(name.encode()).hexdigest()
    return folder / name


class Doorbell:
    """The receiving end: sleep until rung, woken, or a timeout."""

    def __init__(self, path: Path) -> None:
        self._fd: int | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_read: int | None = None
        self._wake_write: int | None = None
        self._woken = threading.Event()  # where there is no FIFO to select on
        if not HAS_FIFOS:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkfifo(path, 0o600)
        self._fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._selector.register(self._wake_read, selectors.EVENT_READ)

    @property
    def poll_interval(self) -> float:
        return SLOW_POLL_SECONDS if self._selector else FALLBACK_POLL_SECONDS

    def wait(self, timeout: float) -> None:
        """Return when rung (eating the rings so far), woken, or after ``timeout`` seconds.

        Once :meth:`wake` was called, every wait returns at once.
        """
        if self._selector is None or self._fd is None:
            self._woken.wait(timeout)
            return
        ready = {key.fd for key, _ in self._selector.select(timeout)}
        if self._fd in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._fd, 4096):
                    pass

    def wake(self) -> None:
        """End the current and every later :meth:`wait` at once (from any thread)."""
        self._woken.set()
        if self._wake_write is not None:
            with contextlib.suppress(BlockingIOError):  # full: a wake is pending anyway
                os.write(self._wake_write, b"\x01")

    def close(self) -> None:
        """Release the descriptors; only once no thread waits (see the module docstring)."""
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        for fd in (self._fd, self._wake_read, self._wake_write):
            if fd is not None:
                os.close(fd)
        self._fd = self._wake_read = self._wake_write = None


def ring(path: Path) -> None:
    """Wake whoever waits on ``path``; nobody waiting, or a pipe already full, is fine."""
    if not HAS_FIFOS:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno in (errno.ENXIO, errno.ENOENT):
            return  # no receiver has it open, or the subscription is gone
        raise
    try:
        with contextlib.suppress(BlockingIOError):
            os.write(fd, b"\x01")
    finally:
        os.close(fd)
