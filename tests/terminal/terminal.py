"""A command run under a pseudo-terminal, read as a person would see it.

The process gets a real pty (stdin, stdout and stderr) of a given size, so it behaves as it
does in a terminal: rich draws live views, ``billing top`` reads single keys. What it
writes is kept; :meth:`Terminal.text` is that output without the escape sequences (colours,
cursor moves), good enough to look for words in.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence

#: CSI sequences (colours, cursor moves, modes), OSC titles, and charset or keypad switches.
_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


class Terminal:
    def __init__(
        self, args: Sequence[str], env: Mapping[str, str], *, columns: int = 120, rows: int = 40
    ) -> None:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = subprocess.Popen(
            list(args),
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env={**env, "TERM": "xterm-256color"},
            start_new_session=True,
            preexec_fn=_take_terminal,  # so that Ctrl-C in it is a SIGINT, as in a shell
        )
        os.close(follower)
        self._leader = leader
        self.raw = bytearray()

    def text(self) -> str:
        return _ESCAPES.sub(b"", bytes(self.raw)).decode(errors="replace")

    def read_until(self, condition: Callable[[str], bool], timeout: float, what: str) -> str:
        """Read until ``condition(text)`` holds; fails with the screen's tail otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.1)
            text = self.text()
            if condition(text):
                return text
        raise AssertionError(
            f"never saw {what} in {timeout:.0f} s; the output ends:\n" + self.text()[-4000:]
        )

    def send(self, keys: bytes) -> None:
        os.write(self._leader, keys)

    def wait(self, timeout: float) -> int:
        """Read what is left until the process exits; its exit code."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        self._read(0.1)
        return self.process.wait(max(deadline - time.monotonic(), 0.1))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._leader)

    def _read(self, timeout: float) -> None:
        readable, _, _ = select.select([self._leader], [], [], timeout)
        if not readable:
            return
        try:
            self.raw += os.read(self._leader, 65536)
        except OSError:  # EIO: the process closed the terminal (it exited)
            time.sleep(timeout)


def _take_terminal() -> None:
    """In the child, a new session's leader: make its stdin (the pty) its controlling terminal.

    Ctrl-C and Ctrl-\\ get their default actions back, as a shell gives a job it runs in
    the foreground: a test run started in the background by a non-interactive shell (``make
    test &``) inherits SIGINT and SIGQUIT ignored, and ignored signals survive ``exec``, so
    the command would never see the Ctrl-C the test types.
    """
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
