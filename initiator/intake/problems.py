"""What is wrong with a batch file: problems, the rejection, and the collector that bounds them.

A rejected batch answers with up to ``max_problems`` problems, in physical line order, so a
user can fix the file in one go without the service holding an unbounded list in memory.
Problems come in two kinds that decide the status code: *malformed* ones (the file cannot be
read as CSV or JSON Lines at all: gzip, UTF-8, quoting, JSON syntax, the header) give 400,
*invalid* ones (a readable line that breaks a field rule) give 422. 413 and 415 are stops
decided before or while reading the body. When both kinds are listed, the more fundamental
one (415, then 413, then 400) gives the status; problems beyond the limit do not count.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from enum import IntEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class Problem(BaseModel):
    """One reason the batch is rejected, as it appears in the JSON body of the 4xx answer."""

    model_config = ConfigDict(frozen=True)

    line: int | None
    """Physical line number (the CSV header is line 1); None for whole-body problems."""
    field: str | None
    """The field or header column concerned, if any."""
    reason: str


class Status(IntEnum):
    """Status codes a rejection can carry, ordered so that the most fundamental one wins."""

    INVALID = 422
    MALFORMED = 400
    TOO_LARGE = 413
    UNSUPPORTED = 415


_TITLES = {
    Status.MALFORMED: "The batch file is malformed",
    Status.INVALID: "The batch file has invalid transactions",
    Status.TOO_LARGE: "The batch file is too large",
    Status.UNSUPPORTED: "The batch file's media type or encoding is not supported",
}
_PRECEDENCE = (Status.UNSUPPORTED, Status.TOO_LARGE, Status.MALFORMED, Status.INVALID)


class BatchRejected(Exception):  # noqa: N818 - the name the HTTP layer and issue use
    """The whole batch is refused; the HTTP layer turns this into its 4xx JSON body."""

    def __init__(
        self,
        status_code: int,
        title: str,
        problems: list[Problem],
        *,
        problems_truncated: bool = False,
    ) -> None:
        super().__init__(f"{status_code} {title}: {len(problems)} problem(s)")
        self.status_code = status_code
        self.title = title
        self.problems = problems
        self.problems_truncated = problems_truncated
        """True when the list stopped at the limit: more problems may exist than are listed."""

    def body(self) -> dict[str, Any]:
        """A JSON-ready body in the spirit of RFC 9457 problem details."""
        return {
            "title": self.title,
            "status": self.status_code,
            "problems": [problem.model_dump() for problem in self.problems],
            "problems_truncated": self.problems_truncated,
        }


class StopScanning(Exception):  # noqa: N818 - a control-flow signal, like StopIteration
    """Raised inside the pipeline when reading further cannot give trustworthy results."""


class ProblemCollector:
    """Keeps the first ``limit`` problems by line number, whatever order they arrive in.

    Problems do not arrive strictly in line order: UTF-8 is checked a block ahead of the
    parser, and once the duplicate detector has spilled to disk it finds duplicates only at
    the end. So the collector keeps a sorted list, drops the latest line when over the limit,
    and tells the parser when scanning further cannot change the answer (``is_settled``).
    """

    def __init__(self, limit: int, field_order: Sequence[str] = ()) -> None:
        if limit < 1:
            raise ValueError("max_problems must be at least 1")
        self._limit = limit
        # Within a line, problems read in the file's field order whatever order they are found.
        self._field_rank = {field: rank for rank, field in enumerate(field_order, start=1)}
        self._keys: list[tuple[float, int, int]] = []
        self._problems: list[Problem] = []
        self._statuses: list[Status] = []  # of the problems kept: they decide the status code
        self._arrivals = 0
        self.found = False
        """Whether any problem was recorded (a plain attribute: the parser reads it per line)."""
        self.truncated = False

    def add(
        self, line: int | None, field: str | None, reason: str, status: Status = Status.INVALID
    ) -> None:
        self.found = True
        # Whole-body problems (no line) sort last; then field order, then arrival order.
        rank = self._field_rank.get(field, 0) if field is not None else 0
        key = (float("inf") if line is None else float(line), rank, self._arrivals)
        self._arrivals += 1
        if len(self._problems) >= self._limit:
            if line is not None and key > self._keys[-1]:
                self.truncated = True
                return
            self._keys.pop()
            self._problems.pop()
            self._statuses.pop()
            self.truncated = True
        index = bisect.bisect(self._keys, key)
        self._keys.insert(index, key)
        self._problems.insert(index, Problem(line=line, field=field, reason=reason))
        self._statuses.insert(index, status)

    def stop(self, line: int | None, field: str | None, reason: str, status: Status) -> None:
        """Record a problem after which nothing further can be read, and stop the scan."""
        self.add(line, field, reason, status)
        raise StopScanning(reason)

    @property
    def limit(self) -> int:
        return self._limit

    def is_settled(self, checked_through: int) -> bool:
        """True when the list is full and every line up to ``checked_through`` was checked.

        Then no problem still to be found can sort before the ones kept, so the scan may end.
        """
        return len(self._problems) >= self._limit and self._keys[-1][0] <= checked_through

    def has_problem_through(self, line: int) -> bool:
        return bool(self._keys) and self._keys[0][0] <= line

    @property
    def problems(self) -> list[Problem]:
        return list(self._problems)

    def rejection(self) -> BatchRejected | None:
        if not self._problems:
            return None
        status = next(s for s in _PRECEDENCE if s in self._statuses)
        return BatchRejected(
            int(status), _TITLES[status], self.problems, problems_truncated=self.truncated
        )
