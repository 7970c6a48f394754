"""``RetryLater``: a handler's explicit "not now, again in a moment".

A handler that raises any other exception leaves its message hidden for the rest of its
visibility timeout (a minute by default) — right for a failure, too slow for a known,
short wait such as a batch that is still being accepted. ``RetryLater`` makes the wait
explicit: the engine shortens the message's visibility to ``delay`` seconds, so it comes
back soon. Each retry is a dequeue, so a message that keeps asking to wait still ends in
the poison queue; :func:`growing_delay` spreads the attempts so that this takes a while.
"""

from __future__ import annotations


class RetryLater(Exception):  # noqa: N818 - a signal, like arq's Retry, not an error
    """Raised by a handler to have its message reappear after ``delay`` seconds."""

    def __init__(self, reason: str, *, delay: int) -> None:
        super().__init__(reason)
        self.delay = max(delay, 0)


def growing_delay(dequeue_count: int, *, first: int = 1, cap: int = 60) -> int:
    """1, 2, 4, 8 … seconds by dequeue count, capped: quick at first, patient later."""
    exponent: int = max(dequeue_count - 1, 0)
    return min(first << exponent, cap)
