"""DuplicateDetector: exact answers in both phases (in memory, then partitioned on disk)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from initiator.intake import Duplicate, DuplicateDetector


def expected_duplicates(ids: list[str]) -> list[Duplicate]:
    """The reference answer, computed the obvious way (lines start at 1)."""
    first: dict[str, int] = {}
    found = []
    for line, transaction_id in enumerate(ids, start=1):
        if transaction_id in first:
            found.append(Duplicate(transaction_id, line, first[transaction_id]))
        else:
            first[transaction_id] = line
    return found


def detect(
    detector: DuplicateDetector, ids: list[str], limit: int | None = None
) -> list[Duplicate]:
    found: list[Duplicate] = []
    for line, transaction_id in enumerate(ids, start=1):
        found.extend(detector.add(transaction_id, line))
    found.extend(detector.finish(limit))
    return found


def test_in_memory_duplicates_are_reported_at_once() -> None:
    detector = DuplicateDetector()
    assert detector.add("a", 1) == ()
    assert detector.add("b", 2) == ()
    assert list(detector.add("a", 3)) == [Duplicate("a", 3, 1)]
    assert list(detector.add("a", 4)) == [Duplicate("a", 4, 1)]
    assert detector.unchecked_from is None
    assert not detector.spilled
    assert detector.finish() == []
    assert detector.duplicates_found == 2


def test_spilled_detection_is_exact_and_reports_first_lines(tmp_path: Path) -> None:
    rng = random.Random(7)
    ids = [f"id-{rng.getrandbits(40):x}" for _ in range(40_000)]  # > 2,048 per partition
    # Plant repeats: within the in-memory phase, of an in-memory id after the spill, near
    # and far apart after it, and of a repeat.
    plants = [(30, 3), (80, 10), (2_600, 2_599), (4_000, 5), (4_001, 4_000), (19_999, 2_500)]
    for target, source in plants:
        ids[target] = ids[source]
    found: list[Duplicate] = []
    with DuplicateDetector(memory_limit=50, partitions=8, temp_dir=tmp_path) as detector:
        for line, transaction_id in enumerate(ids, start=1):
            found.extend(detector.add(transaction_id, line))
        assert found == [Duplicate(ids[3], 31, 4)]  # the one repeat before the spill
        assert detector.spilled
        [scratch] = tmp_path.iterdir()  # its own directory, holding the partition files
        assert len(list(scratch.iterdir())) == 8
        found.extend(detector.finish())
        assert list(scratch.iterdir()) == []  # each partition is removed once checked
    assert sorted(found) == sorted(expected_duplicates(ids))
    assert len(found) == len(plants)
    assert list(tmp_path.iterdir()) == []  # removed on close


def test_repeats_within_one_partition_count_the_earliest_line_as_first(tmp_path: Path) -> None:
    ids = ["a", "b", "c", "z", "y", "z", "z"]
    with DuplicateDetector(memory_limit=2, partitions=2, temp_dir=tmp_path) as detector:
        assert detect(detector, ids) == [Duplicate("z", 6, 4), Duplicate("z", 7, 4)]


def test_ids_that_prefix_each_other_stay_apart(tmp_path: Path) -> None:
    ids = ["A", "A-1", "A.", "A", "A-1", "A-10", "A-"]
    with DuplicateDetector(memory_limit=0, partitions=4, temp_dir=tmp_path) as detector:
        assert detect(detector, ids) == [Duplicate("A", 4, 1), Duplicate("A-1", 5, 2)]


def test_unchecked_from_tells_which_lines_wait_for_finish(tmp_path: Path) -> None:
    with DuplicateDetector(memory_limit=1, partitions=4, temp_dir=tmp_path) as detector:
        detector.add("a", 1)
        assert detector.unchecked_from is None
        detector.add("b", 2)  # spills: later ids are checked at finish
        assert detector.unchecked_from == 3
        assert detector.add("a", 5) == ()
        assert detector.finish() == [Duplicate("a", 5, 1)]
        assert detector.unchecked_from is None


def test_finish_keeps_the_earliest_duplicates_and_counts_all(tmp_path: Path) -> None:
    ids = [f"T{i}" for i in range(100)] * 3  # 200 repeats
    with DuplicateDetector(memory_limit=10, partitions=16, temp_dir=tmp_path) as detector:
        found = detect(detector, ids, limit=5)
        assert detector.duplicates_found == 200
    assert found == expected_duplicates(ids)[:5]


def test_a_single_partition_works_too(tmp_path: Path) -> None:
    rng = random.Random(3)
    ids = [str(rng.randrange(4_000)) for _ in range(3_000)]
    with DuplicateDetector(memory_limit=5, partitions=1, temp_dir=tmp_path) as detector:
        assert sorted(detect(detector, ids)) == sorted(expected_duplicates(ids))


def test_partitions_must_be_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        DuplicateDetector(partitions=3)


@pytest.mark.parametrize("memory_limit", [0, 10, 1_000_000])
def test_both_phases_agree_on_a_larger_random_workload(tmp_path: Path, memory_limit: int) -> None:
    rng = random.Random(memory_limit)
    ids = [str(rng.randrange(30_000)) for _ in range(20_000)]  # many natural repeats
    with DuplicateDetector(memory_limit=memory_limit, partitions=32, temp_dir=tmp_path) as detector:
        assert sorted(detect(detector, ids)) == sorted(expected_duplicates(ids))


def test_ids_are_compared_exactly(tmp_path: Path) -> None:
    ids = ["A", "a", "a ", "A", "\u00e9", "e\u0301", " a", "a\r", "a\u2028", "a"]
    with DuplicateDetector(memory_limit=1, partitions=2, temp_dir=tmp_path) as detector:
        found = detect(detector, ids)
    assert found == [Duplicate("A", 4, 1), Duplicate("a", 10, 2)]


def test_ids_with_line_feeds_are_refused_once_spilled(tmp_path: Path) -> None:
    detector = DuplicateDetector(memory_limit=0, partitions=1, temp_dir=tmp_path)
    with pytest.raises(ValueError, match="line feeds"):
        detect(detector, ["ok", "bad\nid"])
    detector.close()


def test_a_run_of_distinct_ids_goes_in_at_once_and_a_repeat_of_an_earlier_run_is_told() -> None:
    detector = DuplicateDetector()
    assert detector.add_distinct(["a", "b", "c"], [1, 2, 3]) is True
    assert detector.add_distinct(["d", "e"], [4, 5]) is True
    assert detector.add_distinct(["f", "b", "g"], [6, 7, 8]) is False  # b was on line 2
    assert not detector.spilled


def test_runs_past_the_memory_limit_spill_and_their_repeats_are_found_at_the_finish(
    tmp_path: Path,
) -> None:
    ids = [f"id-{n}" for n in range(1_000)]
    ids[900] = ids[10]  # a repeat of an id kept in memory, in a run after the spill
    runs = [range(start, start + 100) for start in range(0, 1_000, 100)]
    with DuplicateDetector(memory_limit=250, partitions=4, temp_dir=tmp_path) as detector:
        for run in runs:
            assert detector.add_distinct([ids[n] for n in run], [n + 1 for n in run]) is True
        assert detector.spilled
        assert detector.finish() == [Duplicate(ids[10], 901, 11)]
