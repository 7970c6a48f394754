"""The order-id allocator against an in-memory blob container honouring ETags."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from shared.coordination.ids import (
    MAX_ORDER_ID,
    CorruptCounterError,
    IdAllocationError,
    OrderIdAllocator,
)
from shared.storage.ports import BlobProperties
from tests.support.memory_blobs import MemoryBlobContainer

BLOB = "counters/order-id"


def allocator(container: MemoryBlobContainer, range_size: int = 10) -> OrderIdAllocator:
    return OrderIdAllocator(container, BLOB, range_size=range_size, max_retries=20)


def counter_value(container: MemoryBlobContainer) -> int:
    return int(container.get(BLOB).data)


def test_ids_start_at_one_and_follow_each_other_within_a_range() -> None:
    container = MemoryBlobContainer()
    ids = allocator(container, range_size=100)

    assert [ids.next_id() for _ in range(5)] == [1, 2, 3, 4, 5]
    assert counter_value(container) == 100  # one range reserved, not one write per id
    assert ids.reservations == 1


def test_take_spans_ranges_with_one_reservation() -> None:
    container = MemoryBlobContainer()
    ids = allocator(container, range_size=10)
    assert ids.take(3) == [1, 2, 3]

    taken = ids.take(25)

    assert taken == list(range(4, 29))
    # 7 left in the first range, 18 missing → two whole ranges in a single write.
    assert counter_value(container) == 30
    assert ids.reservations == 2
    assert ids.next_id() == 29
    assert ids.take(0) == []


def test_prefetch_reserves_a_range_that_the_next_take_draws_from_memory() -> None:
    container = MemoryBlobContainer()
    ids = allocator(container, range_size=10)

    ids.prefetch()
    assert (ids.reservations, counter_value(container)) == (1, 10)
    requests = container.gets + container.puts
    assert ids.take(4) == [1, 2, 3, 4]
    assert container.gets + container.puts == requests  # served from memory

    ids.prefetch()  # ids at hand: nothing to do
    assert ids.reservations == 1
    assert ids.take(8) == [5, 6, 7, 8, 9, 10, 11, 12]  # the rest, then a new range
    assert ids.reservations == 2


def test_a_prefetched_range_is_never_drawn_by_another_allocator() -> None:
    container = MemoryBlobContainer()
    first, second = allocator(container), allocator(container)
    first.prefetch()
    drawn = [*second.take(5), *first.take(5), *second.take(10)]
    assert len(drawn) == len(set(drawn)) == 20
    assert first.take(1) == [6]


def test_two_allocators_on_one_blob_never_overlap() -> None:
    container = MemoryBlobContainer()
    first, second = allocator(container), allocator(container)

    drawn = [first.next_id(), second.next_id(), *first.take(15), *second.take(15)]

    assert len(drawn) == len(set(drawn)) == 32


def test_ids_are_unique_across_threads_and_allocators() -> None:
    container = MemoryBlobContainer()
    allocators = [allocator(container, range_size=7) for _ in range(3)]
    per_thread: list[list[int]] = []
    start = threading.Barrier(12)

    def draw(ids: OrderIdAllocator) -> None:
        mine: list[int] = []
        start.wait()
        for round_ in range(200):
            if round_ % 10 == 0:
                mine.extend(ids.take(13))
            else:
                mine.append(ids.next_id())
        per_thread.append(mine)

    threads = [threading.Thread(target=draw, args=(allocators[i % 3],)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    everything = [i for mine in per_thread for i in mine]
    assert len(everything) == 12 * (180 + 20 * 13)
    assert len(set(everything)) == len(everything), "an id was handed out twice"
    for mine in per_thread:
        assert mine == sorted(mine), "one thread sees its ids ascending"
    print(f"conflicts: {sum(a.conflicts for a in allocators)}")


@pytest.mark.parametrize("content", [b"abc", b"", b"-5", b"12.5", b"\xff\xfe", b"9" * 200])
def test_a_corrupt_counter_names_the_blob_and_its_content(content: bytes) -> None:
    container = MemoryBlobContainer()
    container.put(BLOB, content)

    with pytest.raises(CorruptCounterError) as raised:
        allocator(container).next_id()

    message = str(raised.value)
    assert BLOB in message
    assert repr(content[:64].decode("utf-8", errors="replace")) in message
    assert container.get(BLOB).data == content, "a corrupt counter is left for a human"


def test_counter_with_surrounding_whitespace_is_accepted() -> None:
    container = MemoryBlobContainer()
    container.put(BLOB, b"41\n")

    assert allocator(container).next_id() == 42


def test_losing_the_create_race_reads_the_winners_value() -> None:
    container = MemoryBlobContainer()

    def another_starter_creates_it(_: str) -> None:
        container.put(BLOB, b"500", create_only=True)

    container.before_put = another_starter_creates_it
    ids = allocator(container)

    assert ids.next_id() == 501  # not 1: the winner's counter was not overwritten
    assert ids.conflicts == 1
    assert counter_value(container) == 510


def test_a_missing_container_is_created() -> None:
    container = MemoryBlobContainer(exists=False)

    assert allocator(container).next_id() == 1
    assert counter_value(container) == 10


class AlwaysContendedContainer(MemoryBlobContainer):
    """Another writer bumps the counter between every read and conditional write."""

    def put(
        self,
        blob: str,
        data: bytes,
        *,
        if_match: str | None = None,
        create_only: bool = False,
        metadata: Mapping[str, str] | None = None,
    ) -> BlobProperties:
        if if_match is not None:
            super().put(blob, str(int(self.get(blob).data) + 1).encode())
        return super().put(blob, data, if_match=if_match, create_only=create_only)


def test_retries_exhausted_raise_a_clear_error() -> None:
    container = AlwaysContendedContainer()
    container.put(BLOB, b"0")
    ids = OrderIdAllocator(container, BLOB, range_size=10, max_retries=3, retry_pause_seconds=0)

    with pytest.raises(IdAllocationError) as raised:
        ids.next_id()

    assert ids.conflicts == 4  # the first attempt and three retries
    assert BLOB in str(raised.value)
    assert "4 times" in str(raised.value)
    assert counter_value(container) == 4, "only the other writer's bumps landed"


def test_a_retry_after_a_conflict_succeeds() -> None:
    container = MemoryBlobContainer()
    container.put(BLOB, b"0")
    container.before_put = lambda blob: container.put(blob, b"100")  # one rival write
    ids = OrderIdAllocator(container, BLOB, range_size=10, max_retries=3, retry_pause_seconds=0)

    assert ids.next_id() == 101
    assert ids.conflicts == 1


def test_reservations_stop_before_the_largest_bigint() -> None:
    container = MemoryBlobContainer()
    container.put(BLOB, str(MAX_ORDER_ID - 5).encode())

    with pytest.raises(IdAllocationError, match="largest BIGINT"):
        allocator(container).next_id()


def test_bad_arguments_are_refused() -> None:
    container = MemoryBlobContainer()
    with pytest.raises(ValueError, match="range_size"):
        OrderIdAllocator(container, range_size=0, max_retries=1)
    with pytest.raises(ValueError, match="count"):
        allocator(container).take(-1)


def test_a_counter_behind_its_floor_moves_past_it_once() -> None:
    container = MemoryBlobContainer()
    floor_asked: list[int] = []

    def floor() -> int:
        floor_asked.append(1)
        return 300_000

    first = OrderIdAllocator(container, BLOB, range_size=10, max_retries=20, floor=floor)
    second = OrderIdAllocator(container, BLOB, range_size=10, max_retries=20, floor=floor)

    assert first.next_id() == 300_001
    assert second.next_id() == 300_011  # read the moved counter: nothing to move
    assert [first.next_id() for _ in range(9)][-1] == 300_010
    assert first.next_id() == 300_021  # a new range: the floor is not asked again
    assert (first.floor_moves, second.floor_moves) == (1, 0)
    assert len(floor_asked) == 2  # once per process, at its first reservation


def test_a_counter_ahead_of_its_floor_is_left_as_it_is() -> None:
    container = MemoryBlobContainer()
    allocator(container, range_size=50).next_id()  # the counter is at 50
    ids = OrderIdAllocator(container, BLOB, range_size=10, max_retries=20, floor=lambda: 20)
    assert ids.next_id() == 51
    assert ids.floor_moves == 0


def test_recheck_floor_drops_the_range_and_moves_a_reset_counter_again() -> None:
    container = MemoryBlobContainer()
    used = [0]
    ids = OrderIdAllocator(container, BLOB, range_size=10, max_retries=20, floor=lambda: used[0])
    assert ids.take(3) == [1, 2, 3]
    used[0] = 3
    container.delete(BLOB)  # the counter is lost: a new one would start at 0 again
    ids.recheck_floor()
    assert ids.take(2) == [4, 5]
    assert ids.floor_moves == 1
    assert counter_value(container) == 13
