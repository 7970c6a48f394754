"""The transaction-id index: one blob per accepted batch, read back through a local cache.

A batch's blob, ``transaction-ids/{received}/{batch_id}`` in the control container, is
written once and never changed. ``received`` (``20250102T030405Z``) is when the batch was
received, in the name so that a listing alone tells which blobs have left the window. The
blob holds:

* a header of ``PARTITIONS + 1`` byte offsets from the blob's start, unsigned 64-bit
  little-endian: partition ``p`` is the bytes from offset ``p`` to offset ``p + 1``;
* then each partition's fingerprints (:mod:`.fingerprints`), sorted, in the same encoding.

A small batch's blob is one ``Put Blob``; one whose fingerprints went to files is staged in
blocks of :data:`BLOCK_BYTES`, so that it is never whole in memory.

Other batches' blobs are downloaded once per process into local files (:class:`IndexCache`,
keyed by name and ETag) and read a partition's section at a time.
"""

from __future__ import annotations

import mmap
import shutil
import sys
import tempfile
import threading
import weakref
from array import array
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

from azure.core.exceptions import ResourceNotFoundError

from initiator.id_window.fingerprints import PARTITIONS, FingerprintPartitions
from shared.closing import Closing
from shared.storage.ports import BlobContainer, BlobProperties

PREFIX = "transaction-ids/"
_TIME_FORMAT = "%Y%m%dT%H%M%SZ"
HEADER_BYTES = (PARTITIONS + 1) * 8
BLOCK_BYTES = 8 * 1024 * 1024
"""A staged block's size: a few partitions of a large batch at a time."""


@dataclass(frozen=True)
class IndexEntry:
    """One batch's index blob, as a listing shows it."""

    name: str
    batch_id: str
    received_at: datetime
    etag: str


def index_name(batch_id: str, received_at: datetime) -> str:
    return f"{PREFIX}{received_at.astimezone(UTC):{_TIME_FORMAT}}/{batch_id}"


def entry_of(properties: BlobProperties) -> IndexEntry | None:
    """The listed blob as an index entry; None for a name this module did not write."""
    received, _, batch_id = properties.name.removeprefix(PREFIX).partition("/")
    try:
        received_at = datetime.strptime(received, _TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None
    if not batch_id:
        return None
    return IndexEntry(properties.name, batch_id, received_at, properties.etag)


def _little_endian(values: array[int]) -> bytes:
    if sys.byteorder == "big":
        values = array("Q", values)
        values.byteswap()
    return values.tobytes()


def _native(data: bytes) -> array[int]:
    values = array("Q", data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def header_of(counts: Iterable[int]) -> bytes:
    offsets = array("Q", [HEADER_BYTES])
    for count in counts:
        offsets.append(offsets[-1] + 8 * count)
    if len(offsets) != PARTITIONS + 1:
        raise ValueError(f"an index has {PARTITIONS} partitions")
    return _little_endian(offsets)


def offsets_of(header: bytes) -> array[int]:
    """The header's offsets; ``ValueError`` if they cannot be an index's."""
    if len(header) != HEADER_BYTES:
        raise ValueError("an index header is cut short")
    offsets = _native(header)
    if offsets[0] != HEADER_BYTES or any(b < a for a, b in pairwise(offsets)):
        raise ValueError("an index header's offsets are out of order")
    return offsets


def write_index(container: BlobContainer, name: str, partitions: FingerprintPartitions) -> None:
    """Store ``partitions`` (finished) as the blob ``name``."""
    header = header_of(partitions.counts)
    if not partitions.spilled:
        sections = (_little_endian(partitions.partition(p)) for p in range(PARTITIONS))
        container.put(name, b"".join([header, *sections]))
        return
    block_ids: list[str] = []
    pending = [header]
    pending_bytes = len(header)

    def stage() -> None:
        block_id = f"ids-{len(block_ids):06d}"
        container.stage_block(name, block_id, b"".join(pending))
        block_ids.append(block_id)
        pending.clear()

    for number in range(PARTITIONS):
        section = _little_endian(partitions.partition(number))
        pending.append(section)
        pending_bytes += len(section)
        if pending_bytes >= BLOCK_BYTES:
            stage()
            pending_bytes = 0
    if pending:
        stage()
    container.commit_blocks(name, block_ids)


class CachedIndex:
    """Another batch's index in a local file: its offsets in memory, its sections on disk."""

    def __init__(self, entry: IndexEntry, path: Path, offsets: array[int]) -> None:
        self.entry = entry
        self.path = path
        self.offsets = offsets

    def open(self) -> OpenIndex:
        """Map the file to read its sections (``FileNotFoundError`` once it was dropped)."""
        return OpenIndex(self)


class OpenIndex(Closing):
    """A cached index mapped into memory: a section is read where a comparison looks, so
    a few fingerprints looked up in a large section touch a few pages, not all of it."""

    def __init__(self, cached: CachedIndex) -> None:
        self._cached = cached
        self._file = cached.path.open("rb")
        try:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            self._file.close()
            raise
        self._values: memoryview | array[int]
        if sys.byteorder == "little":  # the file's words as they are, in place
            self._values = memoryview(self._map).cast("Q")
        else:
            self._values = _native(self._map[:])
        if len(self._map) != cached.offsets[-1]:
            self.close()
            raise ValueError(f"the cached index {cached.entry.name} is cut short")

    def common(self, number: int, own: set[int]) -> int:
        """How many of ``own`` (fingerprints of partition ``number``) this index holds."""
        offsets = self._cached.offsets
        return common_count(own, self._values, offsets[number] // 8, offsets[number + 1] // 8)

    def close(self) -> None:
        if isinstance(self._values, memoryview):
            self._values.release()
        self._map.close()
        self._file.close()


#: A set this many times smaller than a section looks its fingerprints up one by one
#: (about log2 of the section's size probes each) instead of reading the whole section.
_LOOK_UP_BELOW = 16


def common_count(
    own: set[int], values: memoryview | array[int], start: int = 0, end: int | None = None
) -> int:
    """How many of ``own`` the sorted section ``values[start:end]`` holds: in C over the
    section, or by ``bisect`` per fingerprint when ``own`` is much the smaller."""
    end = len(values) if end is None else end
    if start >= end:
        return 0
    if len(own) * _LOOK_UP_BELOW < end - start:
        common = 0
        for value in own:
            at = bisect_left(values, value, start, end)
            common += at < end and values[at] == value
        return common
    with memoryview(values)[start:end] as section:
        if own.isdisjoint(section):
            return 0
        return len(own.intersection(section))


class IndexCache(Closing):
    """Other batches' index blobs in local files, downloaded once each per process.

    Safe for the intake's threads: one lock around the map and the downloads. ``keep``
    drops the files of blobs a listing no longer shows (deleted, or out of the window).
    """

    def __init__(self, container: BlobContainer, temp_dir: str | Path | None = None) -> None:
        self._container = container
        directory = tempfile.mkdtemp(prefix="transaction-ids-", dir=temp_dir)
        self._directory = Path(directory)
        self._cleanup = weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
        self._lock = threading.Lock()
        self._cached: dict[str, CachedIndex] = {}
        self._downloads = 0
        self.downloads = 0
        """Blobs downloaded so far (each once, unless it changed or was dropped)."""

    def get(self, entry: IndexEntry) -> CachedIndex | None:
        """``entry``'s blob in a local file; None if it is gone meanwhile."""
        with self._lock:
            cached = self._cached.get(entry.name)
            if cached is not None and cached.entry.etag == entry.etag:
                return cached
            path = self._directory / f"{self._downloads:08d}.index"
            self._downloads += 1
            try:
                with path.open("wb") as out:
                    for block in self._container.read_blocks(entry.name):
                        out.write(block)
                with path.open("rb") as stored:
                    offsets = offsets_of(stored.read(HEADER_BYTES))
            except ResourceNotFoundError:
                path.unlink(missing_ok=True)
                return None
            if path.stat().st_size != offsets[-1]:
                path.unlink()
                raise ValueError(f"the index blob {entry.name} does not hold what its header says")
            if cached is not None:
                cached.path.unlink(missing_ok=True)
            self.downloads += 1
            self._cached[entry.name] = cached = CachedIndex(entry, path, offsets)
            return cached

    def keep(self, names: set[str]) -> None:
        """Drop every cached blob whose name is not in ``names``."""
        with self._lock:
            for name in [name for name in self._cached if name not in names]:
                self._cached.pop(name).path.unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            self._cached.clear()
        self._cleanup()
