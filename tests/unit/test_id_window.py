"""The billed-id window's parts: fingerprints partitioned in bounded memory, the index blob's
format read back through the cache, and the comparison of a batch with the others.

Through HTTP, on both backends: ``tests/api/test_duplicate_transaction_ids.py``.
"""

from __future__ import annotations

from array import array
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from initiator.id_window import index as index_module
from initiator.id_window.fingerprints import PARTITIONS, FingerprintPartitions, partition_of
from initiator.id_window.index import (
    HEADER_BYTES,
    IndexCache,
    IndexEntry,
    common_count,
    entry_of,
    index_name,
    offsets_of,
    write_index,
)
from initiator.id_window.window import IdWindow
from shared.domain.transactions import transaction_id_hash
from shared.storage.embedded import EmbeddedStorageAccount
from shared.storage.embedded.blob import EmbeddedBlobContainer
from shared.storage.ports import BlobProperties

RECEIVED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def container(account: EmbeddedStorageAccount) -> EmbeddedBlobContainer:
    created = account.container("control")
    created.create()
    return created


def _ids(count: int, prefix: str = "T") -> list[str]:
    return [f"{prefix}-{n:08d}" for n in range(count)]


def _finished(ids: list[str], tmp_path: Path, memory_limit: int = 10**6) -> FingerprintPartitions:
    partitions = FingerprintPartitions(memory_limit=memory_limit, temp_dir=tmp_path)
    for start in range(0, len(ids), 700):  # in chunks, as the publication adds them
        partitions.add(ids[start : start + 700])
    partitions.finish()
    return partitions


def _expected(ids: list[str]) -> list[list[int]]:
    by_partition: list[list[int]] = [[] for _ in range(PARTITIONS)]
    for transaction_id in ids:
        value = transaction_id_hash(transaction_id)
        by_partition[partition_of(value)].append(value)
    return [sorted(values) for values in by_partition]


def test_a_fingerprint_is_the_control_totals_hash_of_the_id(tmp_path: Path) -> None:
    with _finished(["A-1"], tmp_path) as partitions:
        value = transaction_id_hash("A-1")
        assert list(partitions.partition(value >> 56)) == [value]
        assert sum(partitions.counts) == 1


def test_fingerprints_spill_to_files_past_the_memory_limit_and_read_back_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _ids(20_000)
    buffered: list[int] = []
    spill = FingerprintPartitions._spill

    def watched(self: FingerprintPartitions) -> None:
        buffered.append(self._buffered)
        spill(self)

    monkeypatch.setattr(FingerprintPartitions, "_spill", watched)
    in_memory = _finished(ids, tmp_path)
    spilled = _finished(ids, tmp_path, memory_limit=3_000)

    assert not in_memory.spilled
    assert spilled.spilled
    assert len(buffered) >= 5
    assert max(buffered) <= 3_000 + 700  # the limit, plus one chunk of ids at most
    expected = _expected(ids)
    for number in range(PARTITIONS):
        assert list(in_memory.partition(number)) == expected[number]
        assert list(spilled.partition(number)) == expected[number]
    assert in_memory.counts == spilled.counts == [len(values) for values in expected]


def test_close_removes_the_partition_files(tmp_path: Path) -> None:
    partitions = _finished(_ids(5_000), tmp_path, memory_limit=1_000)
    assert list(tmp_path.glob("batch-fingerprints-*/*.q"))

    partitions.close()

    assert list(tmp_path.iterdir()) == []


def test_nothing_is_added_after_finish(tmp_path: Path) -> None:
    with _finished(_ids(3), tmp_path) as partitions, pytest.raises(RuntimeError):
        partitions.add(["late"])


def test_a_new_reading_starts_with_no_fingerprints(tmp_path: Path) -> None:
    """The serial reader after the helpers: a new publication, new partitions."""
    first = FingerprintPartitions(memory_limit=100, temp_dir=tmp_path)
    first.add(_ids(500))
    first.close()
    again = _finished(_ids(10), tmp_path)
    assert sum(again.counts) == 10


@pytest.mark.parametrize("memory_limit", [10**6, 1_000], ids=["one put", "staged blocks"])
def test_an_index_blob_reads_back_partition_by_partition(
    container: EmbeddedBlobContainer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memory_limit: int,
) -> None:
    monkeypatch.setattr(index_module, "BLOCK_BYTES", 4096)  # several blocks when staged
    ids = _ids(6_000)
    name = index_name("20250102-030405-abc", RECEIVED)
    with _finished(ids, tmp_path, memory_limit) as partitions:
        write_index(container, name, partitions)

    (listed,) = list(container.list(index_module.PREFIX))
    entry = entry_of(listed)
    assert entry == IndexEntry(name, "20250102-030405-abc", RECEIVED, listed.etag)
    assert listed.size == HEADER_BYTES + 8 * len(ids)
    with IndexCache(container, tmp_path) as cache:
        cached = cache.get(entry)
        assert cached is not None
        expected = _expected(ids)
        with cached.open() as opened:
            counts = [opened.common(n, set(expected[n])) for n in range(PARTITIONS)]
            assert opened.common(0, {1, 2, 3}) == 0
        assert counts == [len(values) for values in expected]
        assert cache.get(entry) is cached
        assert cache.downloads == 1


def test_a_header_out_of_order_or_cut_short_is_refused() -> None:
    good = index_module.header_of([1] * PARTITIONS)
    assert offsets_of(good)[-1] == HEADER_BYTES + 8 * PARTITIONS
    with pytest.raises(ValueError, match="cut short"):
        offsets_of(good[:-8])
    swapped = array("Q", offsets_of(good))
    swapped[3], swapped[4] = swapped[4], swapped[3]
    with pytest.raises(ValueError, match="out of order"):
        offsets_of(swapped.tobytes())


def test_names_the_index_did_not_write_are_not_entries() -> None:
    for name in ("transaction-ids/", "transaction-ids/yesterday/b1", "transaction-ids/x"):
        assert entry_of(BlobProperties(name, "e", 0)) is None


@pytest.mark.parametrize("own_size", [3, 3_000], ids=["looked up", "read whole"])
def test_common_counts_the_same_either_way(own_size: int) -> None:
    section = array("Q", range(0, 20_000, 2))
    own = set(range(1, 2 * own_size, 2)) | {4, 10}
    assert common_count(own, section) == 2
    assert common_count({1, 3}, section) == 0
    assert common_count(own, array("Q")) == 0


def test_the_window_counts_repeats_per_batch_and_deletes_expired_blobs(
    container: EmbeddedBlobContainer, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    window = IdWindow(container, timedelta(hours=1), tmp_path)
    published = {}
    for batch_id, ids, received in (
        ("old", _ids(50), now - timedelta(hours=2)),
        ("a", [*_ids(40, "A"), "shared-1", "shared-2"], now - timedelta(minutes=5)),
        ("b", [*_ids(40, "B"), "shared-2"], now - timedelta(minutes=1)),
        ("new", [*_ids(10), "shared-1", "shared-2", "other"], now),
    ):
        with _finished(ids, tmp_path) as partitions:
            published[batch_id] = window.publish(batch_id, received, partitions)

    with _finished([*_ids(10), "shared-1", "shared-2", "other"], tmp_path) as own:
        repeats = window.repeats(published["new"], own)

    assert [(r.entry.batch_id, r.count) for r in repeats] == [("a", 2), ("b", 1)]
    names = {blob.name for blob in container.list()}
    assert names == {published["a"], published["b"], published["new"]}  # "old" deleted
    window.close()
