"""What a worker process reports of its wedged handler reaches the supervisor whole, cut to
its room when too long, and cleared when the handler returns."""

from __future__ import annotations

import multiprocessing

from processor.wedged_report import REASON_BYTES, WedgedReport


def test_a_reason_is_read_back_cut_to_its_room_and_cleared() -> None:
    report = WedgedReport(multiprocessing.get_context("spawn"))
    assert report.read() is None
    report.write("handler thread processor-x-dequeue-1 busy for 612 s")
    assert report.read() == "handler thread processor-x-dequeue-1 busy for 612 s"
    report.write("é" * REASON_BYTES)  # two bytes each: cut before the one that does not fit
    long = report.read()
    assert long == "é" * ((REASON_BYTES - 1) // 2)
    report.write(None)
    assert report.read() is None
