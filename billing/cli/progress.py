"""``billing submit FILE --wait``: an upload bar, a processing bar, then the reconciliation.

The upload bar counts the bytes as httpx pulls them from the file (what has left for the
initiator). The processing bar polls ``GET /batches/{id}`` every second: chunks settled
(applied or failed) of the total, and the transactions applied per second so far. At the
end the batch's status table (control vs warehouse totals, reconciled) and its end-to-end
throughput are printed. Bars go to stderr, so stdout keeps only the batch id for scripts.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

import httpx
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from billing.cli.reports import status_table
from shared.contracts.batch_status import FINAL_STATUSES

POLL_SECONDS = 1.0


def upload_progress(console: Console) -> Progress:
    return Progress(
        TextColumn("upload    "),
        BarColumn(),
        TaskProgressColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def counted(blocks: Iterable[bytes], progress: Progress, total: int) -> Iterator[bytes]:
    """The blocks, advancing an upload bar of ``total`` bytes as each one is taken."""
    task = progress.add_task("upload", total=total)
    for block in blocks:
        yield block
        progress.advance(task, len(block))


def follow_batch(client: httpx.Client, batch_id: str, console: Console) -> dict[str, Any]:
    """Show the processing bar until the batch completes or fails; returns its last status."""
    columns = (
        TextColumn("processing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("chunks · [bold]{task.fields[rate]}[/] tx/s · {task.fields[state]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        body = _status(client, batch_id)
        task = progress.add_task(
            "processing", total=body["chunks"]["total"], rate="—", state=body["status"]
        )
        while True:
            chunks = body["chunks"]
            progress.update(
                task,
                completed=chunks["applied"] + chunks["failed"],
                rate=_rate(body),
                state=state_text(body),
            )
            if body["status"] in FINAL_STATUSES:
                break
            time.sleep(POLL_SECONDS)
            body = _status(client, batch_id)
    console.print(status_table(body))
    timings = body["timings"]
    waited = timings.get("waiting_for_release_seconds") or 0.0
    if waited and timings.get("processing_throughput") is not None:
        console.print(
            f"throughput: [bold]{timings['processing_throughput']:,.0f}[/] transactions/s "
            f"processing ({body['transactions']:,} in {timings['processing_seconds']:.1f} s, "
            f"after {waited:.1f} s waiting for the release)"
        )
    elif timings.get("throughput") is not None:
        seconds = timings["end_to_end_seconds"]
        console.print(
            f"throughput: [bold]{timings['throughput']:,.0f}[/] transactions/s end to end "
            f"({body['transactions']:,} in {seconds:.1f} s)"
        )
    return body


def _status(client: httpx.Client, batch_id: str) -> dict[str, Any]:
    body: dict[str, Any] = client.get(f"/batches/{batch_id}").raise_for_status().json()
    return body


def _rate(body: dict[str, Any]) -> str:
    """Transactions applied per second since the batch was received (chunks x mean size),
    the time waiting for the release left out."""
    chunks = body["chunks"]
    timings = body["timings"]
    throughput = timings.get("processing_throughput") or timings.get("throughput")
    if throughput is not None:
        return f"{throughput:,.0f}"
    received = timings["received_at"]
    elapsed = time.time() - _epoch(received) - (timings.get("waiting_for_release_seconds") or 0)
    if not chunks["total"] or elapsed <= 0:
        return "—"
    applied = body["transactions"] * chunks["applied"] / chunks["total"]
    return f"{applied / elapsed:,.0f}"


def state_text(body: dict[str, Any]) -> str:
    """The state beside the processing bar: status, failed chunks, chunks rated ahead of
    the warehouse, a held gate."""
    chunks = body["chunks"]
    failed = chunks["failed"]
    state = f"{body['status']}, {failed} failed" if failed else str(body["status"])
    rated = chunks.get("rated", chunks["applied"])
    if rated > chunks["applied"]:
        state += f" · {rated} rated"
    if body.get("waiting_for_release"):
        state += " · gate held: waiting for release"
    return state


def _epoch(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()
