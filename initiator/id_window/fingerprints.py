"""A batch's transaction-id fingerprints, partitioned and sorted, in bounded memory.

A fingerprint is :func:`~shared.domain.transactions.transaction_id_hash` of an id, the
64-bit blake2b the control totals already sum. Its top :data:`PARTITION_BITS` bits choose
one of :data:`PARTITIONS` partitions, so that two equal ids always meet in the same one and
a check can hold one partition at a time: a 13.9-million-id batch (a 1 GB file) puts
~54,000 fingerprints in each, a few MB as a ``set``.

Fingerprints wait in memory, in one ``array`` per partition, up to ``memory_limit`` of them
(8 bytes each); past that every partition's buffer is appended to its own file, as
:class:`~initiator.intake.duplicates.DuplicateDetector` does with ids. Most batches never
touch the disk. :meth:`FingerprintPartitions.finish` sorts each partition (so that a check
with few fingerprints of its own can look each one up instead of reading a whole section),
then :meth:`~FingerprintPartitions.partition` hands them out one partition at a time.

A reading that starts over (the serial reader after the helpers gave up on a file) starts
a new publication and with it new partitions: fingerprints never outlive their reading.
Partition files live in a fresh directory under ``temp_dir``, removed by :meth:`close` or
at the latest when the object is garbage-collected.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import weakref
from array import array
from collections.abc import Iterable
from pathlib import Path

from shared.closing import Closing
from shared.domain.transactions import id_digests

PARTITION_BITS = 8
PARTITIONS = 1 << PARTITION_BITS
_SHIFT = 64 - PARTITION_BITS
DEFAULT_MEMORY_LIMIT = 1_000_000
"""Fingerprints held in memory before they go to files: 8 MB."""


def fingerprints_of(transaction_ids: Iterable[str]) -> array[int]:
    """The fingerprints of ``transaction_ids`` as unsigned 64-bit values, in order."""
    values = array("Q", id_digests(transaction_ids))
    if sys.byteorder == "little":  # the digests are big-endian words
        values.byteswap()
    return values


def partition_of(fingerprint: int) -> int:
    return fingerprint >> _SHIFT


class FingerprintPartitions(Closing):
    """:meth:`add` ids while reading, :meth:`finish` once, then read :meth:`partition`."""

    def __init__(
        self, *, memory_limit: int = DEFAULT_MEMORY_LIMIT, temp_dir: str | Path | None = None
    ) -> None:
        self._memory_limit = memory_limit
        self._temp_dir = temp_dir
        self._buffers: list[array[int]] = [array("Q") for _ in range(PARTITIONS)]
        self._buffered = 0
        self._counts = [0] * PARTITIONS
        self._directory: Path | None = None
        self._cleanup: weakref.finalize[[str], FingerprintPartitions] | None = None
        self._finished = False

    @property
    def spilled(self) -> bool:
        """Whether fingerprints have gone to partition files."""
        return self._directory is not None

    @property
    def counts(self) -> list[int]:
        """Fingerprints per partition."""
        return list(self._counts)

    def add(self, transaction_ids: Iterable[str]) -> None:
        if self._finished:
            raise RuntimeError("fingerprints were added after finish()")
        buffers, counts = self._buffers, self._counts
        added = 0
        for value in fingerprints_of(transaction_ids):
            partition = value >> _SHIFT
            buffers[partition].append(value)
            counts[partition] += 1
            added += 1
        self._buffered += added
        if self._buffered > self._memory_limit:
            self._spill()

    def finish(self) -> None:
        """Sort every partition; after this, only :meth:`partition` reads."""
        if self._finished:
            return
        self._finished = True
        for number, buffer in enumerate(self._buffers):
            if self._directory is None:
                self._buffers[number] = array("Q", sorted(buffer))
                continue
            path = self._path(number)
            values = self._read(number)
            values.extend(buffer)
            self._buffers[number] = array("Q")
            path.write_bytes(array("Q", sorted(values)).tobytes())
        self._buffered = 0

    def partition(self, number: int) -> array[int]:
        """Partition ``number``'s fingerprints, sorted (after :meth:`finish`)."""
        if not self._finished:
            raise RuntimeError("finish() first")
        if self._directory is None:
            return self._buffers[number]
        return self._read(number)

    def close(self) -> None:
        self._buffers = [array("Q") for _ in range(PARTITIONS)]
        if self._cleanup is not None:
            self._cleanup()

    def _spill(self) -> None:
        if self._directory is None:
            directory = tempfile.mkdtemp(prefix="batch-fingerprints-", dir=self._temp_dir)
            self._directory = Path(directory)
            self._cleanup = weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
        for number, buffer in enumerate(self._buffers):
            if buffer:
                with self._path(number).open("ab") as out:
                    buffer.tofile(out)
                self._buffers[number] = array("Q")
        self._buffered = 0

    def _path(self, number: int) -> Path:
        assert self._directory is not None
        return self._directory / f"{number:03d}.q"

    def _read(self, number: int) -> array[int]:
        values = array("Q")
        path = self._path(number)
        if path.exists():
            values.frombytes(path.read_bytes())
        return values
