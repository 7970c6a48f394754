"""``billing``: one command for every role and tool of the sample.

Each command's module is imported when that command runs, not when ``billing`` starts. A
role then loads only its own code: ``billing processor`` — and each worker process it
spawns, which imports this module again — does not pay for the tools' dependencies (the
dashboard's FastAPI app behind ``billing cost``, the warehouse's Alembic behind ``billing
warehouse``, the HTTP client and Rich behind the reports). That is a second of CPU and
tens of megabytes of memory per process, at every start and every scale-out.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

if TYPE_CHECKING:  # Click's classes, which recent Typers vendor (older ones use click itself)
    from typer._click import Command, Context

#: Which module registers which top-level commands (its ``register(app)``), in help order.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "billing.cli.roles": ("initiator", "processor", "controller", "serve"),
    "billing.cli.batches": ("generate", "submit", "pricebook"),
    "billing.cli.operate": ("release", "hold"),
    "billing.cli.poison": ("poison",),
    "billing.cli.events": ("events",),
    "billing.cli.demo": ("demo",),
    "billing.cli.reports": ("status", "invoices", "warehouse"),
    "billing.cli.bench": ("bench",),
    "billing.cli.cost": ("cost",),
    "billing.cli.top": ("top",),
}
_MODULE_OF = {name: module for module, names in COMMAND_MODULES.items() for name in names}
#: Long-running roles keep their tracebacks (they go to logs, where they are wanted); every
#: other command fails in one line (:mod:`billing.cli.failures`).
_KEEP_TRACEBACKS = {*COMMAND_MODULES["billing.cli.roles"], *COMMAND_MODULES["billing.cli.bench"]}


@cache
def commands_of(module: str) -> TyperGroup:
    """The commands ``module`` registers, imported on first use."""
    registered = typer.Typer()
    registered.callback()(lambda: None)  # a group, even for a module with one command
    importlib.import_module(module).register(registered)
    group = typer.main.get_command(registered)
    assert isinstance(group, TyperGroup)
    return group


class LazyCommands(TyperGroup):
    """The top-level group: lists every command, imports one's module only to run it (or
    to show its help)."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(_MODULE_OF)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        module = _MODULE_OF.get(cmd_name)
        return None if module is None else commands_of(module).get_command(ctx, cmd_name)

    def invoke(self, ctx: Context) -> Any:
        from billing.cli.failures import explained

        def command() -> str | None:  # known once the group has chosen it
            name = ctx.invoked_subcommand
            return None if name in _KEEP_TRACEBACKS else name

        with explained(command):
            return super().invoke(ctx)


app = typer.Typer(
    cls=LazyCommands,
    name="billing",
    help="Billing map-reduce on Azure: run the roles, submit batches, operate the pipeline.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _billing() -> None:
    """Billing map-reduce on Azure: run the roles, submit batches, operate the pipeline."""


def main() -> None:
    app()
