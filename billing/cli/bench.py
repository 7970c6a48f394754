"""``billing bench [NAME] [--quick]``: run the benchmarks of ``bench/``.

The benchmarks live in the repository's ``bench/`` folder, not in the installed package:
they are a developer's tool, run from a clone (``pip install -e .``). This command finds
the clone next to the ``shared`` package it was installed from and runs
``python -m bench`` there, in a subprocess, with this interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

#: billing/cli/bench.py → the repository root of an editable install
REPO_ROOT = Path(__file__).resolve().parents[2]


def bench(
    name: str | None = typer.Argument(
        None,
        help="One benchmark (see --list); all if omitted.",
    ),
    quick: bool = typer.Option(False, "--quick", help="Small runs that finish in seconds."),
    list_only: bool = typer.Option(False, "--list", help="List the benchmarks and exit."),
) -> None:
    """Run benchmarks that print ratios measured side by side in one run."""
    if not (REPO_ROOT / "bench" / "run.py").is_file():
        typer.echo(
            f"no bench/ folder next to {REPO_ROOT}: benchmarks run from a clone of the "
            "repository (pip install -e .)",
            err=True,
        )
        raise typer.Exit(2)
    command = [sys.executable, "-m", "bench"]
    if list_only:
        command.append("--list")
    if name:
        command.append(name)
    if quick:
        command.append("--quick")
    raise typer.Exit(subprocess.call(command, cwd=REPO_ROOT))


def register(app: typer.Typer) -> None:
    app.command()(bench)
