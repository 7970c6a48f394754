"""Single key presses for ``billing top`` (``q`` quits), on POSIX terminals and on Windows.

The terminal modules are imported when keys are read, not with the command: ``termios``
and ``tty`` exist only on POSIX, ``msvcrt`` only on Windows.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator

#: ``pressed(timeout)``: waits up to ``timeout`` s for a key; the key (lower case), or None.
Pressed = Callable[[float], str | None]
#: How often Windows' console is asked whether a key is waiting.
WINDOWS_POLL_SECONDS = 0.05


@contextlib.contextmanager
def keys() -> Iterator[Pressed]:
    """Without a terminal there are no keys, only the wait."""
    if not sys.stdin.isatty():
        yield _no_keys
    elif os.name == "nt":
        yield _windows_pressed
    else:
        with _posix_keys() as pressed:
            yield pressed


def _no_keys(timeout: float) -> None:
    time.sleep(timeout)


@contextlib.contextmanager
def _posix_keys() -> Iterator[Pressed]:
    """stdin in cbreak mode (keys arrive unbuffered, Ctrl-C still interrupts), restored after."""
    import select
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def pressed(timeout: float) -> str | None:
        readable, _, _ = select.select([fd], [], [], timeout)
        return os.read(fd, 1).decode(errors="replace").lower() if readable else None

    try:
        yield pressed
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _windows_pressed(timeout: float) -> str | None:
    import msvcrt  # the Windows console's own key queue

    deadline = time.monotonic() + timeout
    while True:
        if msvcrt.kbhit():  # type: ignore[attr-defined,unused-ignore]
            return str(msvcrt.getwch()).lower()  # type: ignore[attr-defined,unused-ignore]
        if time.monotonic() >= deadline:
            return None
        time.sleep(WINDOWS_POLL_SECONDS)
