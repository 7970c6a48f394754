"""DuplicateDetector: exact answers in both phases (in memory, then spilled to SQLite)."""

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


def detect(detector: DuplicateDetector, ids: list[str]) -> list[Duplicate]:
    found: list[Duplicate] = []
    for line, transaction_id in enumerate(ids, start=1):
        found.extend(detector.add(transaction_id, line))
    found.extend(detector.flush())
    return found


def test_in_memory_duplicates_are_reported_at_once() -> None:
    detector = DuplicateDetector()
    assert detector.add("a", 1) == ()
    assert detector.add("b", 2) == ()
    assert list(detector.add("a", 3)) == [Duplicate("a", 3, 1)]
    assert list(detector.add("a", 4)) == [Duplicate("a", 4, 1)]
    assert detector.unchecked_from is None
    assert not detector.spilled


def test_spilled_detection_is_exact_and_reports_first_lines(tmp_path: Path) -> None:
    rng = random.Random(7)
    ids = [f"id-{rng.getrandbits(40):x}" for _ in range(5_000)]
    # Plant repeats: within the in-memory phase, across the spill, within one buffer, and
    # of ids first seen long before.
    for target, source in [
        (30, 3),
        (80, 10),
        (4_000, 5),
        (4_001, 4_000),
        (4_999, 2_500),
        (2_600, 2_599),
    ]:
        ids[target] = ids[source]
    with DuplicateDetector(memory_limit=50, flush_size=64, temp_dir=tmp_path) as detector:
        found = detect(detector, ids)
        assert detector.spilled
        assert len(list(tmp_path.iterdir())) == 1  # its own scratch directory
    assert sorted(found) == sorted(expected_duplicates(ids))
    assert len(found) == 6
    assert list(tmp_path.iterdir()) == []  # removed on close


def test_a_repeat_within_one_buffer_counts_the_earlier_line_as_first(tmp_path: Path) -> None:
    ids = ["a", "b", "c", "z", "y", "z", "z"]
    with DuplicateDetector(memory_limit=2, flush_size=100, temp_dir=tmp_path) as detector:
        assert detect(detector, ids) == [Duplicate("z", 6, 4), Duplicate("z", 7, 4)]


def test_unchecked_from_tells_which_lines_are_still_pending(tmp_path: Path) -> None:
    with DuplicateDetector(memory_limit=1, flush_size=3, temp_dir=tmp_path) as detector:
        detector.add("a", 1)
        detector.add("b", 2)  # spills: both now on disk, checked
        assert detector.unchecked_from is None
        detector.add("c", 5)
        detector.add("a", 6)
        assert detector.unchecked_from == 5
        assert list(detector.add("d", 7)) == [Duplicate("a", 6, 1)]  # third id: flushed
        assert detector.unchecked_from is None


@pytest.mark.parametrize("memory_limit", [0, 10, 1_000_000])
def test_both_phases_agree_on_a_larger_random_workload(tmp_path: Path, memory_limit: int) -> None:
    rng = random.Random(memory_limit)
    ids = [str(rng.randrange(30_000)) for _ in range(20_000)]  # many natural repeats
    with DuplicateDetector(
        memory_limit=memory_limit, flush_size=500, temp_dir=tmp_path
    ) as detector:
        assert sorted(detect(detector, ids)) == sorted(expected_duplicates(ids))


def test_ids_are_compared_exactly() -> None:
    with DuplicateDetector(memory_limit=1, flush_size=2) as detector:
        found = detect(detector, ["A", "a", "a ", "A", "\u00e9", "e\u0301"])
    assert found == [Duplicate("A", 4, 1)]
