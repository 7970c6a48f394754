"""``billing top``: a live terminal view of the queues, the processors and the running batches.

It polls the initiator's ``GET /dashboard/live`` every second (asking only for samples it
does not have) and redraws: the depth of every work queue by priority and partition, the
results and poison queues, each processor instance with its dequeue threads, and the
batches still on their way (with the last one closed). ``q`` or Ctrl-C quits. Like
``billing status`` it needs only the API's URL and key, no storage credentials.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import time
import tty
from collections.abc import Iterator
from typing import Any

import httpx
import typer
from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from billing.cli.reports import API_KEY_OPTION, URL_OPTION
from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.priority import PRIORITIES
from shared.settings import Settings

REFRESH_SECONDS = 1.0
#: Closed batches shown under the running ones.
CLOSED_SHOWN = 3


def top(
    url: str | None = URL_OPTION,
    api_key: str | None = API_KEY_OPTION,
    once: bool = typer.Option(False, "--once", help="Print one view and exit (for scripts)."),
) -> None:
    """Live view of queue depths, processors and their threads, running batches; q quits."""
    settings = Settings()
    base_url = url or f"http://{settings.host}:{settings.port}"
    key = api_key or (settings.api_keys[0].get_secret_value() if settings.api_keys else None)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    console = Console()
    try:
        with httpx.Client(base_url=base_url, headers=headers, timeout=10.0) as client:
            _run(Poller(client), console, base_url, once=once)
    except KeyRejectedError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(1) from None


def _run(poller: Poller, console: Console, base_url: str, *, once: bool) -> None:
    if once:
        poller.poll()
        console.print(poller.view(base_url))
        if poller.error:
            raise typer.Exit(1)
        return
    with _keys() as pressed, Live(console=console, screen=console.is_terminal) as live:
        try:
            while True:
                poller.poll()
                live.update(poller.view(base_url), refresh=True)
                if pressed(REFRESH_SECONDS) == "q":
                    return
        except KeyboardInterrupt:
            return


class KeyRejectedError(Exception):
    """No point retrying: the initiator refuses the key."""


class Poller:
    """The latest answer of ``/dashboard/live`` and the newest sample seen so far."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client
        self.view_data: dict[str, Any] | None = None
        self.sample: dict[str, Any] | None = None
        self.error: str | None = None

    def poll(self) -> None:
        after = self.sample["seq"] if self.sample else 0
        try:
            response = self._client.get("/dashboard/live", params={"after": after})
        except httpx.TransportError as error:
            self.error = f"cannot reach the initiator ({error}); retrying"
            return
        if response.status_code == 401:
            raise KeyRejectedError(
                "the API key was not accepted (401 Unauthorized): pass --api-key"
            )
        if response.status_code != 200:
            self.error = f"the initiator answered {response.status_code}; retrying"
            return
        self.error = None
        self.view_data = response.json()
        if self.view_data["samples"]:
            self.sample = self.view_data["samples"][-1]

    def view(self, base_url: str) -> RenderableType:
        header = Text.assemble(("billing top", "bold"), f"  {base_url}  ")
        if self.view_data is not None:
            header.append(
                f"reading {self.view_data['age_seconds']:.1f} s old · "
                f"{time.strftime('%H:%M:%S')} · q quits",
                style="dim",
            )
        parts: list[RenderableType] = [header]
        if self.error:
            parts.append(Text(self.error, style="bold red"))
        if self.view_data is None or self.sample is None:
            parts.append(Text("waiting for the first reading…", style="dim"))
            return Group(*parts)
        parts += [
            queue_table(self.view_data["queues"], self.sample),
            processor_table(self.view_data["processors"]),
            batch_table(self.view_data["batches"]),
        ]
        return Group(*parts)


def queue_table(queues: list[dict[str, Any]], sample: dict[str, Any]) -> Table:
    depths: dict[str, int] = sample["queue_depths"]
    partitions = sorted({q["partition"] for q in queues if q["kind"] == "work"})
    table = Table(title="Queue depth", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("queue")
    for partition in partitions:
        table.add_column(f"p{partition}", justify="right")
    table.add_column("total", justify="right", style="bold")
    for priority in PRIORITIES:
        row = [depths.get(q["name"], 0) for q in queues if _is(q, "work", priority)]
        table.add_row(priority, *map(_count, row), _count(sum(row)))
    for priority in PRIORITIES:  # a poison queue is shown once it holds anything
        row = [depths.get(q["name"], 0) for q in queues if _is(q, "poison", priority)]
        if any(row):
            table.add_row(f"{priority} poison", *map(_count, row), _count(sum(row)))
    results = next(q for q in queues if q["kind"] == "results")
    poison = sum(depths.get(q["name"], 0) for q in queues if q["kind"] == "poison")
    blank = [""] * len(partitions)
    table.add_row("results", *blank, _count(depths.get(results["name"], 0)))
    table.add_row("poison (all)", *blank, _count(poison), style="red" if poison else None)
    return table


def processor_table(processors: list[dict[str, Any]]) -> Table:
    table = Table(
        title="Processors (threads: active / started; peak: most active at once since the "
        "previous beat)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("instance", no_wrap=True)
    table.add_column("threads", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for name in ("peak", "depth", "in flight", "chunks", "rated", "errors", "beat"):
        table.add_column(name, justify="right", no_wrap=True)
    for p in processors:
        widest = max(p["total_threads"], 1)
        table.add_row(
            p["instance"],
            f"{p['active_threads']}/{p['total_threads']}",
            ProgressBar(total=widest, completed=p["active_threads"], width=8),
            _count(p.get("peak_active_threads", p["active_threads"])),  # an older initiator
            _count(p["queue_depth"]),
            _count(p["in_flight"]),
            _count(p["handled"]),
            _count(p.get("rated_transactions", 0)),
            Text(str(p["errors"]), style="red" if p["errors"] else ""),
            f"{p['beat_age_seconds']:.0f} s",
        )
    if not processors:
        table.add_row(Text("no live processor instance", style="dim"))
    return table


def batch_table(batches: list[dict[str, Any]]) -> Table:
    table = Table(
        title="Batches (chunks: applied / failed / total)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("batch", no_wrap=True)
    table.add_column("priority", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("", no_wrap=True)
    for name in ("chunks", "tx/s", "elapsed"):
        table.add_column(name, justify="right", no_wrap=True)
    running = [b for b in batches if b["batch"]["status"] not in FINAL_STATUSES]
    closed = [b for b in batches if b["batch"]["status"] in FINAL_STATUSES][:CLOSED_SHOWN]
    for progress in [*running, *closed]:
        batch = progress["batch"]
        chunks = batch["chunks"]
        rate = progress["transactions_per_second"]
        table.add_row(
            batch["batch_id"],
            batch["priority"],
            Text(batch["status"], style=_STATUS_STYLES.get(batch["status"], "yellow")),
            ProgressBar(
                total=max(chunks["total"], 1),
                completed=chunks["applied"] + chunks["failed"],
                width=10,
            ),
            f"{chunks['applied']}/{chunks['failed']}/{chunks['total']}",
            "—" if rate is None else f"{rate:,.0f}",
            f"{progress['elapsed_seconds']:.1f} s",
        )
    if not running and not closed:
        table.add_row(Text("no batch yet", style="dim"))
    return table


_STATUS_STYLES = {"completed": "green", "failed": "bold red", "abandoned": "red"}


def _is(queue: dict[str, Any], kind: str, priority: str) -> bool:
    return bool(queue["kind"] == kind and queue["priority"] == priority)


def _count(value: int) -> str:
    return f"{value:,}"


@contextlib.contextmanager
def _keys() -> Iterator[Any]:
    """``pressed(timeout)``: waits up to ``timeout`` s for a key; returns it, or None.

    On a terminal, stdin is put in cbreak mode (keys arrive unbuffered, Ctrl-C still
    interrupts) and restored after; without a terminal there are no keys, only the wait."""
    if not sys.stdin.isatty():
        yield lambda timeout: time.sleep(timeout)
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def pressed(timeout: float) -> str | None:
        readable, _, _ = select.select([fd], [], [], timeout)
        return os.read(fd, 1).decode(errors="replace").lower() if readable else None

    try:
        yield pressed
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def register(app: typer.Typer) -> None:
    app.command()(top)
