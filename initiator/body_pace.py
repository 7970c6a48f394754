"""How long ``POST /batches`` waits for its body: an idle timeout and a minimum average rate.

An idle timeout alone does not stop a client that sends one byte every few seconds: it
holds an intake slot (and its worker thread) for as long as it likes. So the body must also
arrive at ``min_bytes_per_second`` on average, with one idle timeout of grace: after
waiting ``t`` seconds in all, the server must have had at least
``(t - idle_timeout) * min_bytes_per_second`` bytes. Only time spent *waiting for the
client* counts: the body is pulled as fast as the parser goes, and a highly compressed body
is pulled slowly because inflating and checking it takes the time, not the client.
"""

from __future__ import annotations


class BodyPace:
    """The deadline of each read of one request body."""

    def __init__(self, *, idle_timeout: float, min_bytes_per_second: float) -> None:
        if idle_timeout <= 0 or min_bytes_per_second <= 0:
            raise ValueError("idle_timeout and min_bytes_per_second must be positive")
        self.idle_timeout = idle_timeout
        self.min_bytes_per_second = min_bytes_per_second
        self._waited = 0.0
        self._received = 0

    def next_wait(self) -> float:
        """Seconds the next read may wait; 0 or less: the client is already too slow."""
        earned = self._received / self.min_bytes_per_second
        return min(self.idle_timeout, self.idle_timeout + earned - self._waited)

    def record(self, *, waited: float, received: int) -> None:
        """One read: how long it waited for the client, and how many bytes it brought."""
        self._waited += waited
        self._received += received

    def describe(self) -> str:
        """The rule, for the 408 answer."""
        return (
            f"the request body must keep coming: no pause longer than {self.idle_timeout:g} s "
            f"and at least {self.min_bytes_per_second:,.0f} bytes per second on average"
        )
