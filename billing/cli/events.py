"""``billing events tail|deliveries|redeliver``: watch batch events and their webhooks.

``tail`` subscribes to the ``batch-events`` topic and prints each event as it comes;
``deliveries`` lists webhook deliveries and their attempts from the warehouse;
``redeliver`` sends a delivery again at once (and puts it back on its schedule if that
attempt fails too). See docs/events.md.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer
from sqlalchemy import select

from shared.bus import open_bus
from shared.bus.ports import SubscriptionSpec
from shared.settings import Settings
from shared.warehouse import make_engine
from shared.warehouse.models import DeliveryAttempt, OutboxEvent, WebhookDelivery

#: The subscription ``tail`` reads by default (declared in infra/modules/servicebus.bicep and
#: the emulator's config, where the roles may not create subscriptions).
TAIL_SUBSCRIPTION = "tail"

events_app = typer.Typer(help="Batch events: the topic and the webhooks.", no_args_is_help=True)


def describe(event: dict[str, Any]) -> str:
    """One line for an event: when, what, which batch, its figures, its id."""
    data = event.get("data") or {}
    totals = data.get("warehouse_totals") or {}
    return (
        f"{event.get('time')}  {event.get('type')}  {event.get('subject')}  "
        f"transactions={totals.get('transactions')} reconciled={data.get('reconciled')}  "
        f"id={event.get('id')}"
    )


@events_app.command("tail")
def tail(
    subscription: str = typer.Option(
        TAIL_SUBSCRIPTION, help="The subscription to read (declared in Bicep for Service Bus)."
    ),
    count: int = typer.Option(0, help="Stop after this many events; 0: never."),
    idle: float = typer.Option(0.0, help="Stop after this many quiet seconds; 0: never."),
    raw: bool = typer.Option(False, "--json", help="Print each event's JSON as received."),
) -> None:
    """Print batch events as they arrive on the subscription (first those it kept while
    nobody read it: up to a day on Service Bus, an hour on the embedded bus)."""
    settings = Settings()
    bus = open_bus(settings, settings.events_topic)
    if settings.provision_resources:
        bus.ensure_topic()  # a first run's embedded bus: before any controller made it
    # Dropped by the bus an hour after the last tail stopped reading it.
    spec = SubscriptionSpec(name=subscription, auto_delete_idle_seconds=3600)
    reader = bus.subscribe(spec)
    seen, quiet_since = 0, time.monotonic()
    try:
        while not count or seen < count:
            messages = reader.receive(1.0)
            if not messages:
                if idle and time.monotonic() - quiet_since >= idle:
                    break
                continue
            quiet_since = time.monotonic()
            for message in messages:
                body = message.body.decode()
                typer.echo(body if raw else describe(json.loads(body)))
                seen += 1
    except KeyboardInterrupt:
        pass
    finally:
        reader.close()
        bus.close()


@events_app.command("deliveries")
def deliveries(
    batch_id: str | None = typer.Option(None, "--batch", help="Only this batch's events."),
    limit: int = typer.Option(50, help="The most recent deliveries shown."),
) -> None:
    """List webhook deliveries, newest first, each with its attempts."""
    engine = make_engine(Settings().resolved_warehouse_url)
    query = (
        select(
            WebhookDelivery.delivery_id,
            WebhookDelivery.event_id,
            WebhookDelivery.url,
            WebhookDelivery.state,
            WebhookDelivery.attempts,
            WebhookDelivery.next_attempt_at,
            OutboxEvent.batch_id,
            OutboxEvent.type,
        )
        .join(OutboxEvent, OutboxEvent.event_id == WebhookDelivery.event_id)
        .order_by(WebhookDelivery.delivery_id.desc())
        .limit(limit)
    )
    if batch_id is not None:
        query = query.where(OutboxEvent.batch_id == batch_id)
    try:
        with engine.connect() as connection:
            rows = connection.execute(query).all()
            if not rows:
                typer.echo("no webhook deliveries")
            for row in rows:
                next_at = ""
                if row.state == "pending" and row.next_attempt_at is not None:
                    next_at = f", next at {row.next_attempt_at:%Y-%m-%d %H:%M:%S}"
                typer.echo(
                    f"{row.delivery_id}  {row.batch_id}  {row.type}  {row.url}  "
                    f"{row.state} after {row.attempts} attempt(s){next_at}  (event {row.event_id})"
                )
                attempts = connection.execute(
                    select(
                        DeliveryAttempt.attempted_at,
                        DeliveryAttempt.status_code,
                        DeliveryAttempt.error,
                    )
                    .where(DeliveryAttempt.delivery_id == row.delivery_id)
                    .order_by(DeliveryAttempt.attempt_id)
                )
                for attempted_at, status_code, error in attempts:
                    answer = status_code or "no answer"
                    detail = f"  {error}" if error else ""
                    typer.echo(f"    {attempted_at:%Y-%m-%d %H:%M:%S}  {answer}{detail}")
    finally:
        engine.dispose()


@events_app.command("redeliver")
def redeliver(
    delivery_id: int = typer.Argument(..., help="From billing events deliveries."),
) -> None:
    """Send one delivery again now, signed afresh, with the same webhook-id."""
    from controller.events.webhooks import WebhookSender, claim_for_redelivery

    settings = Settings()
    engine = make_engine(settings.resolved_warehouse_url)
    try:
        sender = WebhookSender.from_settings(engine, settings)
        if sender is None:
            typer.echo("BILLING_WEBHOOK_SECRET is not set: no webhook can be signed", err=True)
            raise typer.Exit(2)
        if not claim_for_redelivery(engine, delivery_id):
            typer.echo(f"no webhook delivery {delivery_id}", err=True)
            raise typer.Exit(1)
        try:
            delivered = sender.attempt(delivery_id)
        finally:
            sender.close()
    finally:
        engine.dispose()
    if delivered:
        typer.echo(f"delivery {delivery_id} delivered")
    else:
        typer.echo(
            f"delivery {delivery_id} not delivered; retried on its schedule "
            "(see billing events deliveries)",
            err=True,
        )
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(events_app, name="events")
