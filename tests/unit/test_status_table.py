"""``billing status`` of a failed batch: the count of failed chunks beside their numbers."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from billing.cli.progress import state_text
from billing.cli.reports import status_table


def failed_batch(failed: list[int]) -> dict[str, Any]:
    return {
        "batch_id": "20261205-090000-0123456789ab",
        "status": "failed",
        "priority": "normal",
        "transactions": 7000,
        "chunks": {"applied": 7 - len(failed), "failed": len(failed), "in_flight": 0, "total": 7},
        "failed_chunks": failed,
        "timings": {"accepted_at": "2026-12-05T09:00:00Z", "completed_at": None},
    }


def rows(table_text: str) -> dict[str, str]:
    """Each row's label → its value, from the drawn table's lines."""
    found: dict[str, str] = {}
    for line in table_text.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if len(cells) == 2 and cells[0]:
            found[cells[0]] = cells[1]
    return found


@pytest.mark.parametrize("piped", [False, True], ids=["terminal-80", "piped"])
def test_a_failed_batch_shows_how_many_chunks_failed_and_which(piped: bool) -> None:
    out = io.StringIO()
    console = Console(
        file=out, width=80, force_terminal=not piped, soft_wrap=piped, color_system=None
    )
    # Chunk 0 failed: its number is 0, its count is 1; they are told apart.
    console.print(status_table(failed_batch([0])))
    shown = rows(out.getvalue())
    assert shown["failed chunks"] == "1"
    assert shown["failed chunk numbers"] == "0"
    assert shown["chunks"] == "6 applied, 1 failed, 0 in flight, of 7"
    assert all(len(line) <= 80 for line in out.getvalue().splitlines())


def test_an_open_batch_shows_the_chunks_rated_on_their_way_to_the_warehouse() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    batch = {
        **failed_batch([]),
        "status": "accepted",
        "chunks": {"total": 7, "rated": 5, "applied": 1, "failed": 0, "in_flight": 6},
    }
    console.print(status_table(batch))
    shown = rows(out.getvalue())
    assert shown["rated"] == "5 (+4 on their way to the warehouse)"
    assert shown["chunks"] == "1 applied, 0 failed, 6 in flight, of 7"


def test_no_rated_row_once_every_rated_chunk_is_applied() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True, color_system=None)
    batch = {**failed_batch([]), "chunks": {**failed_batch([])["chunks"], "rated": 7}}
    console.print(status_table(batch))
    assert "rated" not in rows(out.getvalue())


def test_the_processing_bar_says_how_many_chunks_are_rated_ahead_of_the_warehouse() -> None:
    chunks = {"total": 7, "rated": 5, "applied": 1, "failed": 0, "in_flight": 6}
    assert state_text({"status": "processing", "chunks": chunks}) == "processing · 5 rated"
    settled = {**chunks, "rated": 1}
    assert state_text({"status": "processing", "chunks": settled}) == "processing"
