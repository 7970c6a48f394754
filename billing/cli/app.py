"""``billing``: one command for every role and tool of the sample."""

from __future__ import annotations

import typer

from billing.cli import batches, bench, cost, demo, operate, poison, reports, roles, top

app = typer.Typer(
    name="billing",
    help="Billing map-reduce on Azure: run the roles, submit batches, operate the pipeline.",
    no_args_is_help=True,
    add_completion=False,
)
roles.register(app)
batches.register(app)
operate.register(app)
poison.register(app)
demo.register(app)
reports.register(app)
bench.register(app)
cost.register(app)
top.register(app)


def main() -> None:
    app()
