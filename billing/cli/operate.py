"""Operator commands: ``billing release`` and ``billing hold`` flip the release gate.

Both write the durable flag (``gate/state.json`` in the control container), then broadcast
the change on the trigger topic, so waiting processors react at once and processors started
later read the flag. The same as ``POST /control/release`` and ``POST /control/hold``.
"""

from __future__ import annotations

import typer

from billing.cli.store import control_for_writing, operations_store
from shared.bus import open_bus
from shared.coordination.gate import set_gate


def _flip(*, released: bool) -> None:
    with operations_store(writes=True) as (settings, storage):
        bus = open_bus(settings)
        try:
            control = control_for_writing(settings, storage)
            bus.ensure_topic()
            set_gate(control, bus, released=released)
        finally:
            bus.close()
    typer.echo("gate released: processors are working" if released else "gate held")


def release() -> None:
    """Open the release gate: every held processor starts taking work."""
    _flip(released=True)


def hold() -> None:
    """Close the release gate: processors finish what they hold and take nothing new."""
    _flip(released=False)


def register(app: typer.Typer) -> None:
    app.command()(release)
    app.command()(hold)
