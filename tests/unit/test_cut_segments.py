"""How the segmented intake cuts a file: chunks of the plan, each in runs a helper can hold."""

from __future__ import annotations

import random
from itertools import chain, repeat

import pytest

from initiator.intake.lines import MAX_LINE_BYTES
from initiator.intake.segments import Cut, NotSegmentable, cut_segments, nth_line_feed


def _file(lines: int, *, final_newline: bool = True) -> bytes:
    text = "".join(f"line {number}\n" for number in range(1, lines + 1))
    return (text if final_newline else text[:-1]).encode()


def _shape(cuts: list[Cut]) -> list[tuple[int, int, bool]]:
    """Each run's first line, line count and whether it ends its chunk."""
    return [
        (cut.first_line, cut.data.count(b"\n") + (not cut.data.endswith(b"\n")), cut.ends_chunk)
        for cut in cuts
    ]


def _blocks(data: bytes, size: int) -> list[bytes]:
    return [data[start : start + size] for start in range(0, len(data), size)]


@pytest.mark.parametrize("block", [1, 7, 1 << 20], ids=["byte", "odd", "whole"])
def test_a_chunk_larger_than_a_segment_is_cut_in_runs_its_last_one_marked(block: int) -> None:
    data = _file(25)
    cuts = list(cut_segments(_blocks(data, block), chain([10], repeat(20)), most_lines=4))
    assert _shape(cuts) == [
        (1, 4, False),
        (5, 4, False),
        (9, 2, True),  # the first chunk's 10 lines: 4 + 4 + 2
        (11, 4, False),
        (15, 4, False),
        (19, 4, False),
        (23, 3, True),  # the file's end ends its chunk
    ]
    assert b"".join(cut.data for cut in cuts) == data


def test_a_file_that_ends_where_a_run_does_leaves_its_chunk_unmarked() -> None:
    """The caller stores that chunk at the end (no run can say it is the last)."""
    cuts = list(cut_segments([_file(18)], chain([10], repeat(20)), most_lines=4))
    assert _shape(cuts)[-2:] == [(11, 4, False), (15, 4, False)]


def test_the_last_line_without_its_newline_ends_its_chunk() -> None:
    cuts = list(cut_segments([_file(6, final_newline=False)], repeat(10), most_lines=4))
    assert _shape(cuts) == [(1, 4, False), (5, 2, True)]


def test_segments_no_smaller_than_the_chunks_cut_one_run_per_chunk() -> None:
    cuts = list(cut_segments([_file(9)], chain([2, 4], repeat(8)), most_lines=8, first_line=2))
    assert _shape(cuts) == [(2, 2, True), (4, 4, True), (8, 3, True)]


def test_a_line_longer_than_the_reader_allows_is_left_to_the_serial_reader() -> None:
    with pytest.raises(NotSegmentable):
        list(cut_segments([b"x" * (MAX_LINE_BYTES + 1)], repeat(10), most_lines=4))


@pytest.mark.parametrize("spread", [0, 5, 400], ids=["even", "ragged", "wild"])
def test_the_nth_line_feed_is_found_however_long_the_lines_are(spread: int) -> None:
    """Counted from a guess, it is the line feed a find per line reaches, for every n."""
    rng = random.Random(spread)
    data = bytearray(b"".join(b"x" * rng.randint(0, spread) + b"\n" for _ in range(300)) + b"tail")
    ends = [index for index, byte in enumerate(data) if byte == ord("\n")]
    assert [nth_line_feed(data, n, len(ends)) for n in range(1, len(ends) + 1)] == ends
