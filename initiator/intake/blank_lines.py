"""A cap on the blank lines a batch file may hold.

Blank lines are skipped, not records, so no other limit counts them: without a cap, a
small gzip body of a header and a gigabyte of newlines keeps the parser busy for minutes
before the answer is "no transactions". A real file has a handful; the cap is far above
that and far below what costs noticeable time (100,000 blank lines take milliseconds).
"""

from __future__ import annotations

from initiator.intake.problems import ProblemCollector, Status

MAX_BLANK_LINES = 100_000


class BlankLines:
    """Counts the blank lines skipped; past the cap the scan stops with a 400."""

    def __init__(self, problems: ProblemCollector, limit: int = MAX_BLANK_LINES) -> None:
        self._problems = problems
        self._limit = limit
        self._count = 0

    def skip(self, line: int) -> None:
        self._count += 1
        if self._count > self._limit:
            self._problems.stop(
                line,
                None,
                f"more than {self._limit:,} blank lines: a batch file holds transactions, "
                "not padding",
                Status.MALFORMED,
            )
