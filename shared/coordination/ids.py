"""Order ids from a counter blob, reserved in ranges with ETag optimistic concurrency.

Blob-range order ids (docs/patterns.md): a small blob holds the last id handed out by anyone. To get
ids, a process reads the value and its ETag, writes ``value + range_size`` on the condition
that the ETag has not moved (``If-Match``), and then hands out ``value + 1 … value +
range_size`` from memory without touching storage again. If another process won the race
the write fails with 412 (``ResourceModifiedError``): re-read and try again, a bounded
number of times. No lock, no lease, no per-node configuration; the blob is written once per
range, not once per id, so contention stays low however many threads draw ids.

Ids lost when a process stops with part of a range unused are acceptable (they are order
numbers, not a gapless sequence); duplicates never are, and the conditional write is what
rules them out.

The counter can fall behind the ids already used: the storage holding it is recreated, or
the warehouse is restored without it. A *floor* (the warehouse's highest order id, asked by
the controller) guards against that: the first reservation of a process, and the first
after :meth:`OrderIdAllocator.recheck_floor`, moves a counter found below the floor past it,
with the same conditional write, so this happens once however many processes notice.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable

from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)

from shared.storage.ports import BlobContainer, BlobProperties

log = logging.getLogger(__name__)

DEFAULT_COUNTER_BLOB = "counters/order-id"
#: Order ids land in a signed 64-bit SQL ``BIGINT``; never reserve past it.
MAX_ORDER_ID = 2**63 - 1
#: The counter is stored as decimal text; anything longer than this is not ours.
_MAX_COUNTER_TEXT = 32


class IdAllocationError(RuntimeError):
    """No range could be reserved (too much contention, or the counter is unusable)."""


class CorruptCounterError(IdAllocationError):
    """The counter blob does not hold a non-negative decimal integer."""


class OrderIdAllocator:
    """Hands out unique order ids, starting at 1, to every thread of a process.

    One instance per process and counter blob; any number of processes may share the blob.
    ``conflicts`` counts the optimistic writes that lost a race (412, or 409 when two
    starters both tried to create the counter): a health figure for tests and benchmarks.
    """

    def __init__(
        self,
        container: BlobContainer,
        blob_name: str = DEFAULT_COUNTER_BLOB,
        *,
        range_size: int,
        max_retries: int,
        retry_pause_seconds: float = 0.005,
        floor: Callable[[], int] | None = None,
    ) -> None:
        """``floor``: the highest id already used outside the counter (0 if none), asked at
        the first reservation and after :meth:`recheck_floor`."""
        if range_size < 1:
            raise ValueError(f"range_size must be at least 1, not {range_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must not be negative, not {max_retries}")
        self._container = container
        self._blob_name = blob_name
        self._range_size = range_size
        self._max_retries = max_retries
        self._retry_pause_seconds = retry_pause_seconds
        # The ids still ours: next_free … range_end inclusive (empty when next_free > end).
        self._next_free = 1
        self._range_end = 0
        # One lock around the reservation too: a thread that finds the range empty must
        # wait for the new one anyway, and one reservation serves them all.
        self._lock = threading.Lock()
        self._floor = floor
        self._floor_due = floor is not None
        self.conflicts = 0
        self.reservations = 0
        #: times this process found the counter behind its floor and moved it past
        self.floor_moves = 0

    @property
    def blob_name(self) -> str:
        return self._blob_name

    def next_id(self) -> int:
        """One new id."""
        return self.take(1)[0]

    def take(self, count: int) -> list[int]:
        """``count`` new ids, ascending; they may span several reserved ranges.

        When the current range is short, the missing ids are reserved in one conditional
        write rounded up to whole ranges, so a chunk of any size costs at most one round.
        """
        if count < 0:
            raise ValueError(f"count must not be negative, not {count}")
        with self._lock:
            available = self._range_end - self._next_free + 1
            ids = list(range(self._next_free, self._next_free + min(available, count)))
            self._next_free += len(ids)
            shortfall = count - len(ids)
            if shortfall:
                ranges = -(-shortfall // self._range_size)
                first, last = self._reserve(ranges * self._range_size)
                ids.extend(range(first, first + shortfall))
                self._next_free, self._range_end = first + shortfall, last
            return ids

    def prefetch(self) -> None:
        """Reserve a range now if none is at hand, so that the next :meth:`take` is served
        from memory: for a caller told that ids will be wanted soon (the controller, by a
        batch's trigger, before its first result comes)."""
        with self._lock:
            if self._next_free > self._range_end:
                self._next_free, self._range_end = self._reserve(self._range_size)

    def recheck_floor(self) -> None:
        """Ids handed out collided with ids already used: drop what is left of the current
        range, and have the next reservation compare the counter with the floor again."""
        with self._lock:
            self._next_free = self._range_end + 1
            self._floor_due = self._floor is not None

    # --- the optimistic write of a range -----------------------------------------------
    def _reserve(self, size: int) -> tuple[int, int]:
        """Reserve ``size`` ids in the blob; returns the first and last id reserved."""
        floor = self._floor() if self._floor is not None and self._floor_due else 0
        for attempt in range(self._max_retries + 1):  # the first run is not a re-try
            value, etag = self._read_or_create()
            moved = value < floor
            if moved:
                log.warning(
                    "order-id counter %r is at %d, behind the highest order id already used "
                    "(%d): moving it past (was the storage account recreated, or the "
                    "warehouse restored without it?)",
                    self._blob_name,
                    value,
                    floor,
                )
                value = floor
            end = value + size
            if end > MAX_ORDER_ID:
                raise IdAllocationError(
                    f"counter blob {self._blob_name!r} is at {value}: reserving {size} more "
                    f"ids would pass the largest BIGINT order id"
                )
            try:
                self._container.put(self._blob_name, str(end).encode(), if_match=etag)
            except ResourceModifiedError:
                self.conflicts += 1
                self._pause(attempt)
                continue
            self.reservations += 1
            if moved:
                self.floor_moves += 1
            self._floor_due = False
            return value + 1, end
        raise IdAllocationError(
            f"could not reserve order ids from blob {self._blob_name!r} in container "
            f"{self._container.name!r}: the conditional write lost to another writer "
            f"{self._max_retries + 1} times in a row (max_retries={self._max_retries}); "
            f"raise BILLING_ID_RANGE_SIZE to make reservations rarer"
        )

    def _read_or_create(self) -> tuple[int, str]:
        """The counter's value and ETag, creating it at 0 (create-only) when absent."""
        try:
            blob = self._container.get(self._blob_name)
        except ResourceNotFoundError:
            try:
                return 0, self._create_counter().etag
            except ResourceExistsError:
                # Another starter created it between our read and our write: its value
                # wins, so read it rather than assuming 0.
                self.conflicts += 1
                blob = self._container.get(self._blob_name)
        return self._parse(blob.data), blob.properties.etag

    def _create_counter(self) -> BlobProperties:
        try:
            return self._container.put(self._blob_name, b"0", create_only=True)
        except ResourceNotFoundError:
            # The container itself is missing (a fresh account): create it, once.
            log.info("creating container %s for the order-id counter", self._container.name)
            self._container.create()
            return self._container.put(self._blob_name, b"0", create_only=True)

    def _parse(self, data: bytes) -> int:
        text = data.decode("utf-8", errors="replace").strip()
        if len(text) <= _MAX_COUNTER_TEXT and text.isascii() and text.isdigit():
            return int(text)
        shown = data[:64].decode("utf-8", errors="replace")
        raise CorruptCounterError(
            f"counter blob {self._blob_name!r} in container {self._container.name!r} holds "
            f"{shown!r}{' …' if len(data) > 64 else ''} ({len(data)} bytes), not a "
            f"non-negative integer; fix or delete it only after checking the highest order "
            f"id in the warehouse, or ids would repeat"
        )

    def _pause(self, attempt: int) -> None:
        """A short random pause, growing with the attempt, so racing writers spread out."""
        if self._retry_pause_seconds > 0:
            ceiling = self._retry_pause_seconds * 2 ** min(attempt, 6)
            time.sleep(random.uniform(0, ceiling))
