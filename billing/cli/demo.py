"""``billing demo``: the whole pipeline locally, with a report worth reading."""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import typer
from rich.status import Status
from rich.table import Table

from billing.cli.console import make_console
from billing.cli.reports import invoice_table
from billing.demo.scenario import Backend, DemoResult, run_demo
from shared import meter

console = make_console()
#: Written in the demo's folder: ``source`` it to point the commands at the running demo.
ENV_FILE = "demo.env"


def demo(
    transactions: int = typer.Option(100_000, min=1, help="Transactions in the demo batch."),
    processes: int = typer.Option(
        os.cpu_count() or 1, min=1, help="Processor processes (default: one per core)."
    ),
    backend: str = typer.Option("embedded", help="embedded (no server) or azurite (needs Node)."),
    keep: Path | None = typer.Option(
        None, help="Keep data and role logs in this folder instead of a temporary one."
    ),
    stay: bool = typer.Option(
        False,
        "--stay",
        help="After the batch, keep the roles running until Ctrl-C: submit more batches "
        "(billing submit --wait), watch them with billing top or the dashboard.",
    ),
) -> None:
    """Run initiator, processors and controller as processes and push one batch through."""
    if backend not in ("embedded", "azurite"):
        raise typer.BadParameter("use embedded or azurite", param_hint="--backend")
    chosen: Backend = "embedded" if backend == "embedded" else "azurite"
    console.print(
        f"[bold]billing demo[/]: {transactions:,} transactions, {processes} processor "
        f"process(es), {chosen} backend"
    )
    status = console.status("running the pipeline…")
    with status:
        result = run_demo(
            transactions=transactions,
            processes=processes,
            backend=chosen,
            keep=keep,
            on_ready=_tell_how_to_watch,
            on_environment=_tell_the_environment if stay else None,
            linger=partial(_stay_until_interrupted, status) if stay else None,
        )
    _report(result)
    if not result.reconciled:
        raise typer.Exit(1)


def _tell_how_to_watch(base_url: str, api_key: str) -> None:
    """The demo's initiator listens on a free port with a fresh key: say which."""
    console.print(f"the initiator answers at {base_url} (API key [bold]{api_key}[/]); watch with")
    # soft_wrap: a command to paste stays one line, however narrow the terminal
    console.print(f"  billing top --url {base_url} --api-key {api_key}", soft_wrap=True)
    console.print(f"  or open {base_url}/ in a browser", soft_wrap=True)


def _tell_the_environment(folder: Path, variables: Mapping[str, str]) -> None:
    """The commands find the demo (its API, its store) through these variables; say them,
    and write them where ``source`` takes them."""
    exports = [f"export {name}={shlex.quote(value)}" for name, value in variables.items()]
    env_file = folder / ENV_FILE
    env_file.write_text("".join(f"{line}\n" for line in exports), encoding="utf-8")
    console.print("for the other commands (status, pricebook, poison, hold…) to act on this demo:")
    for line in exports:
        console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)
    console.print(f"  (or: source {shlex.quote(str(env_file))})", soft_wrap=True, markup=False)


def _stay_until_interrupted(status: Status) -> None:
    status.stop()
    console.print("the batch is done; the roles keep running: Ctrl-C stops them and reports")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        console.print("stopping the roles…")


def _report(result: DemoResult) -> None:
    status = result.status
    console.print(f"batch [cyan]{result.batch_id}[/] is [bold]{status['status']}[/]")
    totals = Table(title="Reconciliation: intake control totals vs the warehouse")
    totals.add_column("figure")
    totals.add_column("control", justify="right")
    totals.add_column("warehouse", justify="right")
    control = status.get("control_totals") or {}
    warehouse = status.get("warehouse_totals") or {}
    for name in ("transactions", "quantity", "id_checksum"):
        totals.add_row(name, _figure(control.get(name)), _figure(warehouse.get(name)))
    console.print(totals)
    verdict = "[green]reconciled[/]" if result.reconciled else "[red]NOT reconciled[/]"
    console.print(f"result: {verdict}")

    console.print(invoice_table(console, result.invoices))  # as billing invoices shows them

    requests = result.storage_requests
    per_thousand = meter.total(requests) * 1000 / result.transactions
    console.print(
        f"end to end: {result.seconds:.1f} s, [bold]{result.throughput:,.0f}[/] transactions/s; "
        f"storage requests from submission to close: {meter.total(requests):,} "
        f"({per_thousand:.1f} per 1,000 transactions)"
    )
    console.print("  " + ", ".join(f"{kind} {count:,}" for kind, count in sorted(requests.items())))
    if result.onlooker_requests:
        watching = result.onlooker_requests
        console.print(
            f"not counted above, made for onlookers in that time: {meter.total(watching):,} "
            "(" + ", ".join(f"{kind} {count:,}" for kind, count in sorted(watching.items())) + ")"
        )


def _figure(value: object) -> str:
    """Counts with thousands separators, as ``billing status`` shows them."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def register(app: typer.Typer) -> None:
    app.command()(demo)
