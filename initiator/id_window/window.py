"""The window of billed transaction ids: which live batch already holds a batch's ids.

With ``BILLING_DUPLICATE_TRANSACTION_IDS`` on, each accepted batch leaves the fingerprints
of its ids in an index blob (:mod:`.index`) for as long as the duplicate-body window. A new
batch first writes its own blob, then lists the others and compares, partition by
partition: its own partition as a ``set``, each other batch's section of that partition
against it. A set is read against a section in C (``isdisjoint``, ``intersection``) unless
it is much smaller than the section, when each of its fingerprints is looked up in the
sorted section instead (``bisect``): a small batch then reads a large window at the cost of
its own size.

Writing before comparing is what makes two overlapping batches that arrive together safe:
each sees the other's blob, or at least the later one does, so both may be refused, and
never are both billed.

A listing is also when blobs leave: one received before the window is deleted by whoever
lists it. A blob whose batch is not live (abandoned, removed after a crash, or recorded as
received before the window) is deleted when a comparison meets it, and never refuses
anything.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from azure.core.exceptions import ResourceModifiedError

from initiator.id_window.fingerprints import PARTITIONS, FingerprintPartitions
from initiator.id_window.index import (
    PREFIX,
    CachedIndex,
    IndexCache,
    IndexEntry,
    OpenIndex,
    entry_of,
    index_name,
    write_index,
)
from shared.closing import Closing
from shared.contracts.batch_records import utc_now
from shared.storage.ports import BlobContainer

log = logging.getLogger(__name__)


class DuplicateTransactionIdsError(Exception):
    """Transaction ids of the batch were accepted in another live batch within the window
    (409)."""

    def __init__(self, batch_id: str, repeated: int) -> None:
        ids = "transaction id" if repeated == 1 else "transaction ids"
        super().__init__(
            f"{repeated} {ids} of this batch file were already accepted in batch {batch_id}; "
            "send it again with ?allow_duplicate=true if they really are to be billed twice"
        )
        self.batch_id = batch_id
        self.repeated = repeated


@dataclass(frozen=True)
class Repeat:
    """Another batch holding ``count`` of this batch's fingerprints."""

    entry: IndexEntry
    count: int


class IdWindow(Closing):
    """The index blobs of one deployment's control container, and this process's cache."""

    def __init__(
        self, container: BlobContainer, window: timedelta, temp_dir: str | Path | None = None
    ) -> None:
        self._container = container
        self._window = window
        self._cache = IndexCache(container, temp_dir)

    @property
    def downloads(self) -> int:
        return self._cache.downloads

    def publish(
        self, batch_id: str, received_at: datetime, fingerprints: FingerprintPartitions
    ) -> str:
        """Write the batch's index blob (``fingerprints`` finished); returns its name."""
        name = index_name(batch_id, received_at)
        write_index(self._container, name, fingerprints)
        return name

    def refuse_repeats(
        self,
        own_name: str,
        fingerprints: FingerprintPartitions,
        is_live: Callable[[str], bool],
    ) -> None:
        """:class:`DuplicateTransactionIdsError` naming the earliest live batch that holds
        one of ``fingerprints``; a blob of a batch found not live is deleted."""
        for repeat in self.repeats(own_name, fingerprints):
            if is_live(repeat.entry.batch_id):
                raise DuplicateTransactionIdsError(repeat.entry.batch_id, repeat.count)
            self.remove(repeat.entry.name, if_match=repeat.entry.etag)

    def repeats(self, own_name: str, fingerprints: FingerprintPartitions) -> list[Repeat]:
        """Every other batch in the window holding one of ``fingerprints``, earliest first."""
        others = [self._cache.get(entry) for entry in self._listed(own_name)]
        found = [
            Repeat(cached.entry, count)
            for cached, count in _counts(fingerprints, [c for c in others if c is not None])
            if count
        ]
        return sorted(found, key=lambda repeat: (repeat.entry.received_at, repeat.entry.name))

    def remove(self, name: str, *, if_match: str | None = None) -> None:
        """Best effort: a blob left behind is deleted by a later listing once it expires."""
        try:
            with contextlib.suppress(ResourceModifiedError):
                self._container.delete(name, if_match=if_match)
        except Exception:
            log.warning("could not delete the index blob %s", name, exc_info=True)

    def close(self) -> None:
        self._cache.close()

    def _listed(self, own_name: str) -> list[IndexEntry]:
        """The other blobs received within the window; the older ones are deleted."""
        since = utc_now() - self._window
        current: list[IndexEntry] = []
        for properties in self._container.list(PREFIX):
            entry = entry_of(properties)
            if entry is None or entry.name == own_name:
                continue
            if entry.received_at < since:
                self.remove(entry.name, if_match=entry.etag)
            else:
                current.append(entry)
        # Its own name too: another intake of this process may have cached this batch's
        # blob, and must still find it.
        self._cache.keep({own_name, *(entry.name for entry in current)})
        return current


def _counts(
    fingerprints: FingerprintPartitions, others: list[CachedIndex]
) -> list[tuple[CachedIndex, int]]:
    """How many of ``fingerprints`` each of ``others`` holds, a partition at a time."""
    counts = [0] * len(others)
    with ExitStack() as stack:
        opened: list[OpenIndex | None] = []
        for cached in others:
            try:
                opened.append(stack.enter_context(cached.open()))
            except FileNotFoundError:  # dropped by another intake's listing: out of the window
                opened.append(None)
        for number in range(PARTITIONS):
            own = fingerprints.partition(number)
            if not own:
                continue
            own_set = set(own)
            for index, other in enumerate(opened):
                if other is not None:
                    counts[index] += other.common(number, own_set)
    return list(zip(others, counts, strict=True))
