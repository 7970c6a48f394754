"""The commands' tables at 80 columns and in a pipe: columns left out by priority, no cell
cut, identifiers whole; printed text not broken when it goes to a pipe."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest
from rich.console import Console

from billing.cli.console import make_console
from billing.cli.reports import invoice_table
from billing.cli.top import batch_table, processor_table, queue_table

#: A Container Apps replica's host name is about this long.
INSTANCE = "ca-billing-processor--0000007-6d9f8c7b5-x2k4q"
BATCH_IDS = ["20261205-003146-78f91726c3d2", "20261205-003201-0a1b2c3d4e5f"]


def narrow() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, force_terminal=True, color_system=None), out


def processors() -> list[dict[str, Any]]:
    return [
        {
            "instance": f"{INSTANCE}{n}",
            "active_threads": 3,
            "total_threads": 4,
            "peak_active_threads": 4,
            "queue_depth": 1_234,
            "in_flight": 32,
            "handled": 12_345,
            "rated_transactions": 1_234_567,
            "errors": 0,
            "beat_age_seconds": 2.0,
        }
        for n in range(2)
    ]


def batches() -> list[dict[str, Any]]:
    return [
        {
            "batch": {
                "batch_id": batch_id,
                "priority": "normal",
                "status": status,
                "chunks": {"applied": 1_000, "failed": 0, "total": 1_000},
            },
            "transactions_per_second": 39_964.2,
            "elapsed_seconds": 12.6,
        }
        for batch_id, status in zip(BATCH_IDS, ("processing", "completed"), strict=True)
    ]


def assert_fits(text: str) -> None:
    assert "…" not in text, text  # nothing cut
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, text


def test_top_tables_fit_80_columns_with_ids_and_statuses_whole() -> None:
    console, out = narrow()
    queues = [
        {"name": f"work-{p}-{n}", "kind": "work", "priority": p, "partition": n}
        for p in ("high", "normal", "low")
        for n in range(16)
    ] + [{"name": "results", "kind": "results", "priority": None, "partition": None}]
    sample = {"queue_depths": {q["name"]: 12_345 for q in queues}}

    console.print(queue_table(console, queues, sample))
    console.print(processor_table(console, processors()))
    console.print(batch_table(console, batches()))

    text = out.getvalue()
    assert_fits(text)
    for instance in (p["instance"] for p in processors()):
        assert instance in text
    for batch_id in BATCH_IDS:
        assert batch_id in text
    assert "processing" in text
    assert "completed" in text
    assert "1,000/0/1,000" in text  # the chunks, the most useful column after the status
    assert "errors" in text
    assert "197,520" in text  # a priority's total, its 16 partitions left out


def test_top_shows_rated_chunks_still_on_their_way_to_the_warehouse() -> None:
    console, out = narrow()
    running = batches()[0]
    running["batch"]["chunks"] = {"applied": 200, "rated": 700, "failed": 0, "total": 1_000}
    console.print(batch_table(console, [running]))
    assert_fits(out.getvalue())
    assert "200/0/1,000 +500" in out.getvalue()


def test_top_tables_keep_every_column_when_there_is_room() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)

    console.print(processor_table(console, processors()))
    console.print(batch_table(console, batches()))

    header = out.getvalue()
    for column in ("peak", "depth", "in flight", "beat", "priority", "elapsed", "tx/s"):
        assert column in header


def test_invoices_fit_80_columns_with_customer_ids_whole_and_the_currency_once() -> None:
    console, out = narrow()
    page = {
        "batch_id": BATCH_IDS[0],
        "offset": 0,
        "total_invoices": 123_456,
        "invoices": [
            {
                "customer_id": f"cust-0-{n:06d}-eu-west-enterprise",
                "currency": "USD",
                "lines": 12_345,
                "quantity": 1_234_567,
                "net": 123_456_789_012,
                "tax": 12_345_678_901,
                "total": 135_802_467_913,
            }
            for n in range(3)
        ],
    }

    console.print(invoice_table(console, page))

    text = out.getvalue()
    assert_fits(text)
    for n in range(3):
        assert f"cust-0-{n:06d}-eu-west-enterprise" in text
    assert "total (USD)" in text
    assert "1,358,024,679.13" in text
    assert " USD " not in text.replace("(USD)", "")  # not repeated in every cell


def test_text_printed_to_a_pipe_is_not_broken_into_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()  # not a terminal
    monkeypatch.setattr(sys, "stdout", out)
    command = "billing top --url http://127.0.0.1:40123 --api-key " + "k" * 120

    make_console().print(f"  {command}")

    assert out.getvalue() == f"  {command}\n"


def test_billing_top_starts_without_the_posix_terminal_modules() -> None:
    # As on Windows: termios and tty cannot be imported there.
    code = (
        "import sys; sys.modules['termios'] = None; sys.modules['tty'] = None; "
        "import billing.cli.top, billing.cli.keys"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
