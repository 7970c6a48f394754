"""Exact detection of repeated transaction ids, in bounded memory.

A batch may hold ~15 million ids (a 1 GB file) while taking it may add at most 200 MB to
the initiator (the intake's memory budget, ``bench.intake.INTAKE_MEMORY_BUDGET_MB``), so
keeping every id in a Python dict (~140 bytes an entry with its line number) is not an
option for large batches. The strategy has two phases:

1. **In memory** up to ``memory_limit`` ids: a dict from id to its first line. Most batches
   (thousands to hundreds of thousands of lines) never leave this phase, and a duplicate is
   reported the moment it is added.
2. **Hash-partitioned on disk** beyond that: every id goes to one of ``partitions`` files
   chosen by its hash (the dict's ids first, then each new one), appended in line order
   through a buffer per partition, each id followed by its line. Equal ids always share a
   partition, so
   :meth:`finish` can check one partition at a time: read it, and if its ids are all
   distinct (one ``set()`` in C, the common case) move on; otherwise walk it with a dict to
   name each repeat and its first line. A partition holds about 1/``partitions`` of the ids
   (~120,000 for a 1 GB batch), which bounds the memory of that step.

Why not a B-tree (SQLite keyed by id) or an external sort: measured on 2 million ids, an
on-disk index costs ~1.3 µs an id when ids arrive in order but ~5 µs when they are random
(e.g. UUIDs), since every insert lands on another page once the index outgrows its cache;
sorting runs and merging them costs ~1.5 µs an id, most of it comparisons. Partitioning
costs well under 1 µs an id with sequential I/O only, whatever the order of the ids. The
price is that, once spilled, duplicates are known only at the end, which is fine: any
duplicate rejects the whole batch, and that is decided at the end anyway.

Partition files live in a fresh directory under ``temp_dir`` (tempfile's default when
None), removed by :meth:`close` or at the latest when the detector is garbage-collected.
Ids are stored one per line, so an id must not contain a line feed (the batch-file id
alphabet has none; a :class:`ValueError` says so otherwise).
"""

from __future__ import annotations

import heapq
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import NamedTuple

from shared.closing import Closing

DEFAULT_MEMORY_LIMIT = 200_000
"""~28 MB of dict; batches up to this size never touch the disk."""
DEFAULT_PARTITIONS = 128
_BUFFERED_PER_PARTITION = 2048
"""Ids held per partition before an append (~20 MB over all of them): opening a file to
append costs tens of microseconds on some file systems, so appends must be rare."""


class Duplicate(NamedTuple):
    transaction_id: str
    line: int
    first_line: int


class DuplicateDetector(Closing):
    """Tells which ids were already seen on an earlier line, and on which line."""

    def __init__(
        self,
        *,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        partitions: int = DEFAULT_PARTITIONS,
        temp_dir: str | Path | None = None,
    ) -> None:
        if memory_limit < 0 or partitions < 1 or partitions & (partitions - 1):
            raise ValueError("memory_limit must be >= 0 and partitions a power of two")
        self._memory_limit = memory_limit
        self._mask = partitions - 1
        self._temp_dir = temp_dir
        self._first_lines: dict[str, int] | None = {}
        self._ids: list[list[str]] = []  # per partition, not yet appended to its files
        self._lines: list[list[int]] = []
        self._counts: list[int] = []  # ids per partition, to check the files read back
        self._directory: Path | None = None
        self._spilled_from: int | None = None
        self._cleanup: weakref.finalize[[str], DuplicateDetector] | None = None
        self.duplicates_found = 0
        """How many duplicates were found (``finish`` may return fewer)."""

    @property
    def spilled(self) -> bool:
        """Whether ids have moved to partition files on disk."""
        return self._first_lines is None

    @property
    def unchecked_from(self) -> int | None:
        """First line whose id is not checked yet (known only at :meth:`finish`), or None."""
        return self._spilled_from

    def add(self, transaction_id: str, line: int) -> Sequence[Duplicate]:
        """Record ``transaction_id`` seen on ``line``; lines must increase from call to call.

        Returns the duplicate at once while in memory; once spilled, nothing until finish.
        """
        first_lines = self._first_lines
        if first_lines is None:
            partition = hash(transaction_id) & self._mask
            ids = self._ids[partition]
            ids.append(transaction_id)
            self._lines[partition].append(line)
            if len(ids) >= _BUFFERED_PER_PARTITION:
                self._append(partition)
            return ()
        first_line = first_lines.setdefault(transaction_id, line)
        if first_line != line:
            self.duplicates_found += 1
            return (Duplicate(transaction_id, line, first_line),)
        if len(first_lines) > self._memory_limit:
            self._spill(first_lines, line + 1)
        return ()

    def add_distinct(self, transaction_ids: Sequence[str], lines: Sequence[int]) -> bool:
        """Record a run of ids, no two of them equal, seen on ``lines`` (increasing, after
        every earlier call's); False if one of them was seen before.

        For a caller that only needs to know *whether* there is a repeat (the segmented
        read, which reads the file again serially to name it): in memory the run goes in
        with one dict update in C instead of a call per id, which on the intake's own
        thread cost ~0.3 µs an id. After False the first lines kept are no longer exact
        (the repeat's first line was replaced): close the detector.
        """
        first_lines = self._first_lines
        if first_lines is None or len(first_lines) + len(transaction_ids) > self._memory_limit:
            return not any(map(self.add, transaction_ids, lines))  # the spill starts here
        before = len(first_lines)
        first_lines.update(zip(transaction_ids, lines, strict=True))
        return len(first_lines) == before + len(transaction_ids)

    def finish(self, limit: int | None = None) -> list[Duplicate]:
        """Check every id not checked yet; the first ``limit`` new duplicates by line.

        Call once, after the last :meth:`add`.
        """
        if self._directory is None or self._spilled_from is None:
            return []
        earliest: list[tuple[int, str, int]] = []  # a max-heap on line, by negation
        for partition in range(len(self._ids)):
            self._append(partition)
            for duplicate in self._repeats_in(partition):
                self.duplicates_found += 1
                entry = (-duplicate.line, duplicate.transaction_id, duplicate.first_line)
                if limit is None or len(earliest) < limit:
                    heapq.heappush(earliest, entry)
                elif earliest[0][0] < entry[0]:
                    heapq.heapreplace(earliest, entry)
        self._spilled_from = None
        found = [Duplicate(tid, -negated_line, first) for negated_line, tid, first in earliest]
        return sorted(found, key=lambda duplicate: duplicate.line)

    def close(self) -> None:
        """Drop everything, including the partition files."""
        self._first_lines = {}
        self._ids, self._lines = [], []
        if self._cleanup is not None:
            self._cleanup()

    def _spill(self, first_lines: dict[str, int], next_line: int) -> None:
        directory = tempfile.mkdtemp(prefix="batch-ids-", dir=self._temp_dir)
        self._directory = Path(directory)
        self._cleanup = weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
        self._ids = [[] for _ in range(self._mask + 1)]
        self._lines = [[] for _ in range(self._mask + 1)]
        self._counts = [0] * (self._mask + 1)
        self._first_lines = None
        self._spilled_from = next_line
        for transaction_id, line in first_lines.items():  # in line order
            self.add(transaction_id, line)

    def _path(self, partition: int) -> Path:
        assert self._directory is not None
        return self._directory / f"{partition:04d}.ids"

    def _append(self, partition: int) -> None:
        ids, lines = self._ids[partition], self._lines[partition]
        if not ids:
            return
        text = "\n".join(chain.from_iterable(zip(ids, map(str, lines), strict=True))) + "\n"
        if text.count("\n") != 2 * len(ids):
            raise ValueError("transaction ids must not contain line feeds")
        # newline="" keeps any CR inside an id as it is, on the way out and back in.
        with self._path(partition).open("a", encoding="utf-8", newline="") as out:
            out.write(text)
        self._counts[partition] += len(ids)
        ids.clear()
        lines.clear()

    def _repeats_in(self, partition: int) -> list[Duplicate]:
        count = self._counts[partition]
        if not count:
            return []
        path = self._path(partition)
        with path.open(encoding="utf-8", newline="") as stored:
            records = stored.read().split("\n")
        path.unlink()  # free the disk as we go: a 1 GB batch writes ~300 MB here
        records.pop()  # after the last line feed
        ids = records[0::2]
        assert len(ids) == count, "a partition file does not hold what was written to it"
        if len(set(ids)) == len(ids):
            return []
        first_lines: dict[str, int] = {}
        repeats = []
        for transaction_id, line_text in zip(ids, records[1::2], strict=True):
            line = int(line_text)
            first_line = first_lines.setdefault(transaction_id, line)
            if first_line != line:
                repeats.append(Duplicate(transaction_id, line, first_line))
        return repeats
