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

import httpx
import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from shared.contracts.batch_status import FINAL_STATUSES
from shared.domain.money import minor_exponent
from shared.settings import Settings

warehouse_app = typer.Typer(help="Manage the SQL warehouse.", no_args_is_help=True)

URL_OPTION = typer.Option(None, help="The initiator (default http://HOST:PORT).")
API_KEY_OPTION = typer.Option(
    None, envvar="BILLING_API_KEY", help="Default: the first of BILLING_API_KEYS."
)
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
    body = _get(url, api_key, f"/batches/{batch_id}")
    if as_json:
        typer.echo(json.dumps(body, indent=2))
        return
    console = Console()
    if not watch:
        console.print(status_table(body))
        return
    if not console.is_terminal:
        # A log or a pipe gets the final table once, ending its line; no redraws.
        while body["status"] not in FINAL_STATUSES:
            time.sleep(WATCH_SECONDS)
            body = _get(url, api_key, f"/batches/{batch_id}")
        console.print(status_table(body))
    else:
        with Live(status_table(body), auto_refresh=False, console=console) as live:
            while body["status"] not in FINAL_STATUSES:
                time.sleep(WATCH_SECONDS)
                body = _get(url, api_key, f"/batches/{batch_id}")
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
    body = _get(url, api_key, f"/batches/{batch_id}/invoices", params)
    if as_json:
        typer.echo(json.dumps(body, indent=2))
        return
    Console().print(invoice_table(body))


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


def invoice_table(body: dict[str, Any]) -> Table:
    """One page of ``GET /batches/{id}/invoices``; amounts shown in major units."""
    shown = len(body["invoices"])
    first = body["offset"] + 1 if shown else 0
    table = Table(
        title=f"invoices of batch {body['batch_id']}: {first}-{body['offset'] + shown} "
        f"of {body['total_invoices']}"
    )
    table.add_column("customer")
    for name in ("lines", "quantity", "net", "tax", "total"):
        table.add_column(name, justify="right")
    for invoice in body["invoices"]:
        table.add_row(
            invoice["customer_id"],
            f"{invoice['lines']:,}",
            f"{invoice['quantity']:,}",
            *(_money(invoice[name], invoice["currency"]) for name in ("net", "tax", "total")),
        )
    return table


def _get(
    url: str | None, api_key: str | None, path: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    settings = Settings()
    base_url = url or f"http://{settings.host}:{settings.port}"
    key = api_key or (settings.api_keys[0].get_secret_value() if settings.api_keys else None)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(f"{base_url}{path}", params=params, headers=headers, timeout=30.0)
    except httpx.TransportError as error:
        typer.echo(f"cannot reach the initiator at {base_url}: {error}", err=True)
        raise typer.Exit(2) from None
    try:
        body: Any = response.json()
    except ValueError:
        body = {"title": response.text or response.reason_phrase}
    if response.status_code != 200:
        detail = body.get("detail") if isinstance(body, dict) else None
        title = body.get("title") if isinstance(body, dict) else body
        typer.echo(
            f"{response.status_code}: {title}" + (f" ({detail})" if detail else ""), err=True
        )
        raise typer.Exit(1)
    if not isinstance(body, dict):
        typer.echo(f"unexpected answer from {base_url}{path}: {body!r}", err=True)
        raise typer.Exit(1)
    return body


def _figure(value: object) -> str:
    return "—" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _money(minor: int, currency: str) -> str:
    """Minor units shown in major units, with the currency's own number of decimals."""
    exponent = minor_exponent(currency)
    return f"{Decimal(minor).scaleb(-exponent):,.{exponent}f} {currency}"


def register(app: typer.Typer) -> None:
    app.command()(status)
    app.command()(invoices)
    app.add_typer(warehouse_app, name="warehouse")
