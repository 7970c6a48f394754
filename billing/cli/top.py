"""``billing top``: a live terminal view of the queues, the processors and the running batches.

It polls the initiator's ``GET /dashboard/live`` every second (asking only for samples it
does not have) and redraws: the depth of every work queue by priority and partition, the
results and poison queues, each processor instance with its dequeue threads, and the
batches still on their way (with the last one closed). ``q`` or Ctrl-C quits. Like
``billing status`` it needs only the API's URL and key, no storage credentials.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import typer
from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from billing.cli.api import API_KEY_OPTION, URL_OPTION, api_client
from billing.cli.console import make_console
from billing.cli.fit import Column, column_table, fitted
from billing.cli.keys import keys
from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.priority import PRIORITIES

REFRESH_SECONDS = 1.0
#: Closed batches shown under the running ones.
CLOSED_SHOWN = 3
_STATUS_STYLES = {"completed": "green", "failed": "bold red", "abandoned": "red"}


def top(
    url: str | None = URL_OPTION,
    api_key: str | None = API_KEY_OPTION,
    once: bool = typer.Option(False, "--once", help="Print one view and exit (for scripts)."),
) -> None:
    """Live view of queue depths, processors and their threads, running batches; q quits."""
    console = make_console()
    with api_client(url, api_key, timeout=10.0) as client:
        poller = Poller(client)
        if once:
            # for scripts: one reading, and a failure to get it is the command's failure
            poller.poll(retrying=False)
            console.print(poller.view(str(client.base_url).rstrip("/"), console))
            return
        _run(poller, console, str(client.base_url).rstrip("/"))


def _run(poller: Poller, console: Console, base_url: str) -> None:
    """Redraw every second until q or Ctrl-C. An initiator that does not answer (not started
    yet, restarting) is said on the view and asked again; a refused key ends the command."""
    with keys() as pressed, Live(console=console, screen=console.is_terminal) as live:
        try:
            while True:
                poller.poll()
                live.update(poller.view(base_url, console), refresh=True)
                if pressed(REFRESH_SECONDS) == "q":
                    return
        except KeyboardInterrupt:
            return


class Poller:
    """The latest answer of ``/dashboard/live`` and the newest sample seen so far."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client
        self.view_data: dict[str, Any] | None = None
        self.sample: dict[str, Any] | None = None
        self.error: str | None = None

    def poll(self, *, retrying: bool = True) -> None:
        """Take the next reading. ``retrying``: a failure is shown on the view and the next
        poll tries again (the initiator restarting); otherwise it is raised. A refused key
        is always raised: asking again will not help."""
        after = self.sample["seq"] if self.sample else 0
        try:
            response = self._client.get("/dashboard/live", params={"after": after})
        except httpx.TransportError as error:
            if not retrying:
                raise
            self.error = f"cannot reach the initiator ({error}); retrying"
            return
        if response.status_code == 401 or (response.status_code != 200 and not retrying):
            response.raise_for_status()
        if response.status_code != 200:
            self.error = f"the initiator answered {response.status_code}; retrying"
            return
        self.error = None
        self.view_data = response.json()
        if self.view_data["samples"]:
            self.sample = self.view_data["samples"][-1]

    def view(self, base_url: str, console: Console) -> RenderableType:
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
            queue_table(console, self.view_data["queues"], self.sample),
            processor_table(console, self.view_data["processors"]),
            batch_table(console, self.view_data["batches"]),
        ]
        return Group(*parts)


def queue_table(console: Console, queues: list[dict[str, Any]], sample: dict[str, Any]) -> Table:
    """Depth by priority and partition; the partitions are left out (totals kept) when they
    do not fit."""
    depths: dict[str, int] = sample["queue_depths"]
    partitions = sorted({q["partition"] for q in queues if q["kind"] == "work"})
    rows: list[tuple[str, list[int | None], int, str | None]] = []
    for priority in PRIORITIES:
        row = [depths.get(q["name"], 0) for q in queues if _is(q, "work", priority)]
        rows.append((priority, list(row), sum(row), None))
    for priority in PRIORITIES:  # a poison queue is shown once it holds anything
        row = [depths.get(q["name"], 0) for q in queues if _is(q, "poison", priority)]
        if any(row):
            rows.append((f"{priority} poison", list(row), sum(row), None))
    results = next(q for q in queues if q["kind"] == "results")
    poison = sum(depths.get(q["name"], 0) for q in queues if q["kind"] == "poison")
    blank: list[int | None] = [None] * len(partitions)
    rows.append(("results", blank, depths.get(results["name"], 0), None))
    rows.append(("poison (all)", blank, poison, "red" if poison else None))

    def build(left_out: frozenset[str]) -> Table:
        table = Table(title="Queue depth", title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column("queue", no_wrap=True)
        shown = "partitions" not in left_out
        for partition in partitions if shown else []:
            table.add_column(f"p{partition}", justify="right", no_wrap=True)
        table.add_column("total", justify="right", style="bold", no_wrap=True)
        for name, by_partition, total, style in rows:
            cells = ["" if d is None else _count(d) for d in by_partition] if shown else []
            table.add_row(name, *cells, _count(total), style=style)
        return table

    return fitted(console, build, ["partitions"])


PROCESSOR_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("instance", lambda p: str(p["instance"]), justify="left"),
    Column("threads", lambda p: f"{p['active_threads']}/{p['total_threads']}"),
    Column(
        "",
        lambda p: ProgressBar(
            total=max(p["total_threads"], 1), completed=p["active_threads"], width=8
        ),
        justify="left",
        key="busy",
    ),
    Column("peak", lambda p: _count(p.get("peak_active_threads", p["active_threads"]))),
    Column("depth", lambda p: _count(p["queue_depth"])),
    Column("in flight", lambda p: _count(p["in_flight"])),
    Column("chunks", lambda p: _count(p["handled"])),
    Column("rated", lambda p: _count(p.get("rated_transactions", 0))),
    Column("errors", lambda p: Text(str(p["errors"]), style="red" if p["errors"] else "")),
    Column("beat", lambda p: f"{p['beat_age_seconds']:.0f} s"),
]
#: Left out first when the terminal is narrow: the instance and its work stay.
PROCESSOR_DROP_ORDER = ["busy", "peak", "depth", "beat", "in flight", "chunks", "rated"]


def processor_table(console: Console, processors: list[dict[str, Any]]) -> Table:
    return column_table(
        console,
        PROCESSOR_COLUMNS,
        processors,
        drop_order=PROCESSOR_DROP_ORDER,
        empty="no live processor instance",
        title="Processors (threads: active / started; peak: most active at once since the "
        "previous beat)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )


BATCH_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("batch", lambda b: str(b["batch"]["batch_id"]), justify="left"),
    Column("priority", lambda b: str(b["batch"]["priority"]), justify="left"),
    Column(
        "status",
        lambda b: Text(
            b["batch"]["status"], style=_STATUS_STYLES.get(b["batch"]["status"], "yellow")
        ),
        justify="left",
    ),
    Column(
        "",
        lambda b: ProgressBar(
            total=max(b["batch"]["chunks"]["total"], 1),
            completed=b["batch"]["chunks"]["applied"] + b["batch"]["chunks"]["failed"],
            width=10,
        ),
        justify="left",
        key="progress",
    ),
    Column("chunks", lambda b: _chunks(b["batch"]["chunks"])),
    Column("tx/s", lambda b: _rate(b["transactions_per_second"])),
    Column("elapsed", lambda b: f"{b['elapsed_seconds']:.1f} s"),
]
BATCH_DROP_ORDER = ["progress", "priority", "elapsed"]


def batch_table(console: Console, batches: list[dict[str, Any]]) -> Table:
    running = [b for b in batches if b["batch"]["status"] not in FINAL_STATUSES]
    closed = [b for b in batches if b["batch"]["status"] in FINAL_STATUSES][:CLOSED_SHOWN]
    return column_table(
        console,
        BATCH_COLUMNS,
        [*running, *closed],
        drop_order=BATCH_DROP_ORDER,
        empty="no batch yet",
        title="Batches (chunks: applied / failed / total, +rated on their way)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )


def _chunks(chunks: dict[str, Any]) -> str:
    counts = f"{chunks['applied']:,}/{chunks['failed']:,}/{chunks['total']:,}"
    waiting = chunks.get("rated", chunks["applied"]) - chunks["applied"]
    return f"{counts} +{waiting:,}" if waiting > 0 else counts


def _rate(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:,.0f}"


def _is(queue: dict[str, Any], kind: str, priority: str) -> bool:
    return bool(queue["kind"] == kind and queue["priority"] == priority)


def _count(value: int) -> str:
    return f"{value:,}"


def register(app: typer.Typer) -> None:
    app.command()(top)
