"""``billing cost``: the meter's counts in dollars, per million transactions and per idle month.

    billing cost report.json          # python -m bench.end_to_end --json report.json
    billing cost --live [--url URL]   # the running initiator's /dashboard/live
    billing cost live.json            # a saved /dashboard/live answer

Prices: :class:`shared.cost.prices.AzurePrices` (``BILLING_PRICE_*`` overrides them).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from billing.cli.api import API_KEY_OPTION, URL_OPTION, api_client, get_json
from billing.cli.console import make_console
from billing.cost_sources import UnknownSourceError, usage_from_file, usage_from_live
from initiator.observability.live import LiveView
from shared.cost.estimate import Costs, Usage, estimate, keda_polls_per_hour, with_idle
from shared.cost.prices import PRICES_READ_ON, AzurePrices
from shared.domain.priority import PRIORITIES
from shared.settings import Settings

#: Said instead of a per-million table of zeros, when the source saw no transaction.
NO_TRANSACTIONS = (
    "no transactions measured yet: the processors have rated none since they started and no "
    "sample saw any, so there is nothing to price per million (submit a batch, then ask "
    "again); the idle month follows"
)

#: ``pollingInterval`` of the Container Apps' KEDA queue rules (infra/modules/app.bicep).
KEDA_POLLING_SECONDS = 30.0


def keda_scaled_queues(settings: Settings) -> int:
    """The queues KEDA watches (infra/main.bicep): every work queue, and the results."""
    return len(PRIORITIES) * settings.partitions + 1


def cost(
    source: Path | None = typer.Argument(
        None, help="A bench.end_to_end --json report, or a saved /dashboard/live answer."
    ),
    live: bool = typer.Option(False, "--live", help="Read the running initiator's figures."),
    url: str | None = URL_OPTION,
    api_key: str | None = API_KEY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Dollars per million transactions and per idle month on Azure, from measured counts."""
    if (source is None) == (not live):
        raise typer.BadParameter("give a FILE or --live (one of them)")
    try:
        usage = _live_usage(url, api_key) if live else usage_from_file(source)  # type: ignore[arg-type]
    except UnknownSourceError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(2) from None
    measured_idle = bool(usage.idle_requests_per_hour)
    settings = Settings()
    usage = with_idle(
        usage, keda_polls_per_hour(keda_scaled_queues(settings), KEDA_POLLING_SECONDS)
    )
    costs = estimate(usage, AzurePrices())
    if not usage.transactions_measured:
        # Priced at zero requests, the per-million table would read 0.0000: say why instead.
        typer.echo(NO_TRANSACTIONS, err=True)
    if as_json:
        typer.echo(json.dumps(_as_dict(costs, busy=usage.transactions_measured), indent=2))
    else:
        _print(costs, measured_idle=measured_idle, busy=usage.transactions_measured)


def _live_usage(url: str | None, api_key: str | None) -> Usage:
    with api_client(url, api_key, timeout=10.0) as client:
        return usage_from_live(LiveView.model_validate(get_json(client, "/dashboard/live")))


def _as_dict(costs: Costs, *, busy: bool) -> dict[str, object]:
    return {
        "per_million_transactions": {
            "storage": costs.storage_per_million,
            "service_bus": costs.bus_per_million,
            "compute_floor": costs.compute_per_million,
            "total": costs.per_million,
        }
        if busy
        else None,
        "per_idle_month": {
            **costs.fixed_per_month,
            "idle requests": costs.idle_requests_per_month,
            "total": costs.per_idle_month,
        },
        "prices_read_on": PRICES_READ_ON,
    }


def _print(costs: Costs, *, measured_idle: bool, busy: bool) -> None:
    console = make_console()
    if busy:
        _print_busy(costs, console)
    _print_idle(costs, console, measured_idle=measured_idle)


def _print_busy(costs: Costs, console: Console) -> None:
    busy = Table(title="per million transactions (USD, beyond the free grants)")
    busy.add_column("item")
    busy.add_column("USD", justify="right")
    busy.add_row("storage requests", f"{costs.storage_per_million:.4f}")
    busy.add_row("Service Bus operations", f"{costs.bus_per_million:.4f}")
    compute = costs.compute_per_million
    busy.add_row(
        "Container Apps compute (CPU used; a floor)",
        "not in these figures" if compute is None else f"{compute:.4f}",
    )
    busy.add_row("total", f"{costs.per_million:.4f}")
    console.print(busy)


def _print_idle(costs: Costs, console: Console, *, measured_idle: bool) -> None:
    idle = Table(title="per idle month (USD)")
    idle.add_column("item")
    idle.add_column("USD", justify="right")
    for item, dollars in costs.fixed_per_month.items():
        idle.add_row(item, f"{dollars:.2f}")
    idle.add_row(
        "idle requests: KEDA's depth polls"
        + (", and the measured idle requests" if measured_idle else " (none measured here)"),
        f"{costs.idle_requests_per_month:.2f}",
    )
    idle.add_row("total", f"{costs.per_idle_month:.2f}")
    console.print(idle)
    console.print(
        f"List prices as last known, shape read on {PRICES_READ_ON}, not checked against a "
        "live price page: see shared/cost/prices.py, override with BILLING_PRICE_*."
    )


def register(app: typer.Typer) -> None:
    app.command()(cost)
