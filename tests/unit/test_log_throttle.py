"""The same warning or error in a loop is written once a window, then with a count."""

from __future__ import annotations

import io
import logging
import subprocess
import sys

from shared.log_throttle import RepeatThrottle


def _logger(stream: io.StringIO, throttle: RepeatThrottle) -> logging.Logger:
    logger = logging.getLogger(f"test-throttle-{id(stream)}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = logging.StreamHandler(stream)
    handler.addFilter(throttle)
    logger.addHandler(handler)
    return logger


def test_a_repeated_error_is_written_once_a_window_with_what_was_left_out() -> None:
    now = [0.0]
    stream = io.StringIO()
    logger = _logger(stream, RepeatThrottle(window=60.0, clock=lambda: now[0]))

    def accept_failed(n: int) -> None:  # one place in the code: one kind of record
        logger.error("accept failed on socket %d", n)

    for n in range(10_000):
        accept_failed(n)
    logger.info("a normal line")
    logger.warning("something else")
    now[0] += 61.0
    accept_failed(10_000)

    lines = stream.getvalue().splitlines()
    assert lines == [
        "accept failed on socket 0",
        "a normal line",
        "something else",
        "accept failed on socket 10000 [9,999 more like this in the last 60 s were not logged]",
    ]


def test_info_lines_are_never_held_back() -> None:
    stream = io.StringIO()
    logger = _logger(stream, RepeatThrottle(window=60.0, clock=lambda: 0.0))
    for _ in range(100):
        logger.info("batch accepted")
    assert len(stream.getvalue().splitlines()) == 100


def test_the_roles_logging_throttles_what_it_writes_to_stderr() -> None:
    script = (
        "import logging\n"
        "from shared.telemetry import configure_logging\n"
        "configure_logging()\n"
        "log = logging.getLogger('asyncio')\n"
        "for _ in range(5000):\n"
        "    log.error('socket.accept() out of system resource', exc_info=OSError(24, 'x'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.count("socket.accept() out of system resource") == 1
