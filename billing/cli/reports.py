"""Reports and warehouse commands: ``billing status ID``, ``billing invoices ID``,
``billing warehouse upgrade``.

``status`` and ``invoices`` ask the initiator's HTTP API (``--url``, ``--api-key``), the same
way ``billing submit`` does: the API is the one place that knows where the status lives, and
an operator's machine then needs no storage or database credentials.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from typing import Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from billing.cli.api import API_KEY_OPTION, URL_OPTION, api_client, get_json
from billing.cli.console import make_console
from billing.cli.fit import Column, column_table
from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.money import minor_exponent
from shared.settings import Settings

warehouse_app = typer.Typer(help="Manage the SQL warehouse.", no_args_is_help=True)

JSON_OPTION = typer.Option(False, "--json", help="Print the API's JSON instead of a table.")
WATCH_SECONDS = 1.0


def status(
    batch_id: str = typer.Argument(..., help="The batch id (from `billing submit`)."),
    url: str | None = URL_OPTION,
    api_key: str | None = API_KEY_OPTION,
    as_json: bool = JSON_OPTION,
    watch: bool = typer.Option(
        False, "--watch", "-w", help="Refresh every second until the batch completes or fails."
    ),
) -> None:
    """Show a batch's status: chunks, control vs warehouse totals, reconciliation, timings."""
    with api_client(url, api_key) as client:
        path = f"/batches/{batch_id}"
        body = get_json(client, path)
        if as_json:
            typer.echo(json.dumps(body, indent=2))
            return
        console = make_console()
        if not watch:
            console.print(status_table(body))
            return
        if not console.is_terminal:
            # A log or a pipe gets the final table once, ending its line; no redraws.
            while body["status"] not in FINAL_STATUSES:
                time.sleep(WATCH_SECONDS)
                body = get_json(client, path)
            console.print(status_table(body))
        else:
            with Live(status_table(body), auto_refresh=False, console=console) as live:
                while body["status"] not in FINAL_STATUSES:
                    time.sleep(WATCH_SECONDS)
                    body = get_json(client, path)
                    live.update(status_table(body), refresh=True)
    if body["status"] == "failed" or body.get("reconciled") is False:
        raise typer.Exit(1)


def invoices(
    batch_id: str = typer.Argument(..., help="The batch id."),
    limit: int = typer.Option(20, min=1, max=1000, help="Invoices per page."),
    offset: int = typer.Option(0, min=0, help="Skip this many invoices."),
    order: str = typer.Option("total", help="total (largest first) or customer."),
    url: str | None = URL_OPTION,
    api_key: str | None = API_KEY_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """List a batch's invoices (per-customer totals), a page at a time."""
    if order not in ("total", "customer"):
        raise typer.BadParameter("use total or customer", param_hint="--order")
    params = {"limit": limit, "offset": offset, "order": order}
    with api_client(url, api_key) as client:
        body = get_json(client, f"/batches/{batch_id}/invoices", params)
    if as_json:
        typer.echo(json.dumps(body, indent=2))
        return
    console = make_console()
    console.print(invoice_table(console, body))


@warehouse_app.command("upgrade")
def warehouse_upgrade() -> None:
    """Migrate the warehouse (BILLING_WAREHOUSE_URL) to the latest schema; idempotent."""
    from shared.warehouse.migrate import current_revision, upgrade

    url = Settings().resolved_warehouse_url
    upgrade(url)
    typer.echo(f"warehouse at revision {current_revision(url)}")


def status_table(body: dict[str, Any]) -> Table:
    """The status object of ``GET /batches/{id}`` as a two-column table."""
    chunks = body["chunks"]
    timings = body["timings"]
    table = Table(title=f"batch {body['batch_id']}", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("status", str(body["status"]))
    if "gate" in body:  # an initiator that reports the release gate
        waiting = " (the batch waits for a release)" if body.get("waiting_for_release") else ""
        table.add_row("gate", f"{body['gate']}{waiting}")
    table.add_row("priority", str(body["priority"]))
    table.add_row("transactions", f"{body['transactions']:,}")
    table.add_row(
        "chunks",
        f"{chunks['applied']} applied, {chunks['failed']} failed, "
        f"{chunks['in_flight']} in flight, of {chunks['total']}",
    )
    waiting = chunks.get("rated", chunks["applied"]) - chunks["applied"]
    if waiting > 0:
        table.add_row("rated", f"{chunks['rated']} (+{waiting} on their way to the warehouse)")
    if chunks["failed"]:
        table.add_row("failed chunks", f"{chunks['failed']:,}")
    if body.get("failed_chunks"):
        table.add_row("failed chunk numbers", ", ".join(map(str, body["failed_chunks"])))
    for name in ("transactions", "quantity", "id_checksum"):
        control = (body.get("control_totals") or {}).get(name)
        found = (body.get("warehouse_totals") or {}).get(name)
        table.add_row(f"{name} (control / warehouse)", f"{_figure(control)} / {_figure(found)}")
    reconciled = body.get("reconciled")
    table.add_row(
        "reconciled",
        "—" if reconciled is None else ("[green]yes[/]" if reconciled else "[red]NO[/]"),
    )
    table.add_row("accepted at", str(timings.get("accepted_at") or "—"))
    table.add_row("completed at", str(timings.get("completed_at") or "—"))
    if timings.get("end_to_end_seconds") is not None:
        table.add_row("end to end", f"{timings['end_to_end_seconds']:.2f} s")
    if timings.get("waiting_for_release_seconds"):
        table.add_row("waiting for release", f"{timings['waiting_for_release_seconds']:.2f} s")
        if timings.get("processing_seconds") is not None:
            table.add_row("processing", f"{timings['processing_seconds']:.2f} s")
    throughput = timings.get("processing_throughput") or timings.get("throughput")
    if throughput is not None:
        table.add_row("throughput", f"{throughput:,.0f} tx/s")
    return table


INVOICE_DROP_ORDER = ["quantity", "lines", "net"]


def invoice_table(console: Console, body: dict[str, Any]) -> Table:
    """One page of ``GET /batches/{id}/invoices``; amounts in major units, the currency in
    the headers when the page has one (the usual case), else beside each amount. Narrow
    terminals lose quantity, lines and net before anything else; customer ids stay whole."""
    rows: list[dict[str, Any]] = body["invoices"]
    shown = len(rows)
    first = body["offset"] + 1 if shown else 0
    currencies = {invoice["currency"] for invoice in rows}
    one = next(iter(currencies)) if len(currencies) == 1 else None

    def money(name: str) -> Column[dict[str, Any]]:
        def cell(invoice: dict[str, Any]) -> str:
            amount = _amount(invoice[name], invoice["currency"])
            return amount if one else f"{amount} {invoice['currency']}"

        return Column(f"{name} ({one})" if one else name, cell)

    columns: list[Column[dict[str, Any]]] = [
        Column("customer", lambda invoice: str(invoice["customer_id"]), justify="left"),
        Column("lines", lambda invoice: f"{invoice['lines']:,}"),
        Column("quantity", lambda invoice: f"{invoice['quantity']:,}"),
        *(money(name) for name in ("net", "tax", "total")),
    ]
    drop = [c.header for name in INVOICE_DROP_ORDER for c in columns if c.header.startswith(name)]
    return column_table(
        console,
        columns,
        rows,
        drop_order=drop,
        title=f"invoices of batch {body['batch_id']}: {first}-{body['offset'] + shown} "
        f"of {body['total_invoices']:,}",
    )


def _figure(value: object) -> str:
    return "—" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _amount(minor: int, currency: str) -> str:
    """Minor units shown in major units, with the currency's own number of decimals."""
    exponent = minor_exponent(currency)
    return f"{Decimal(minor).scaleb(-exponent):,.{exponent}f}"


def register(app: typer.Typer) -> None:
    app.command()(status)
    app.command()(invoices)
    app.add_typer(warehouse_app, name="warehouse")
