"""What every benchmark prints, and the figures it hands back to the runner and the smoke test.

A benchmark builds one :class:`Report`: tables of measurements taken side by side in one run,
headline **figures** (mostly ratios, which survive a noisy shared machine far better than
absolute times) and a few lines of conclusion. ``--json FILE`` writes the same as JSON, which
is how ``tests/bench/test_bench_smoke.py`` checks that a benchmark produced its figures
without ever looking at their values.

Every benchmark module has ``main(argv) -> int`` and takes the common options of
:func:`base_parser` (``--quick``, ``--json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table as RichTable

Cell = str | int | float


class Table(BaseModel):
    title: str
    columns: list[str]
    rows: list[list[Cell]] = Field(default_factory=list)


class Report(BaseModel):
    """One benchmark run: tables, headline figures and conclusions."""

    benchmark: str
    quick: bool
    machine: str = Field(
        default_factory=lambda: f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    tables: list[Table] = Field(default_factory=list)
    #: name → value; the runner and the smoke test read these
    figures: dict[str, float] = Field(default_factory=dict)
    conclusions: list[str] = Field(default_factory=list)

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
        self.tables.append(Table(title=title, columns=list(columns), rows=[list(r) for r in rows]))

    def figure(self, name: str, value: float) -> None:
        if not math.isfinite(value):
            raise ValueError(f"figure {name} is not a finite number: {value}")
        self.figures[name] = value

    def conclude(self, text: str) -> None:
        self.conclusions.append(text)

    def emit(self, json_path: Path | None = None, console: Console | None = None) -> None:
        """Print the report; also write it as JSON when ``json_path`` is given."""
        # Piped output (the runner, a log file) gets a fixed width rather than 80 columns.
        out = console or Console(width=None if sys.stdout.isatty() else 130)
        mode = " (quick)" if self.quick else ""
        out.print(f"[bold]bench {self.benchmark}[/]{mode} on {self.machine}")
        for table in self.tables:
            rendered = RichTable(title=table.title, title_justify="left")
            for index, column in enumerate(table.columns):
                rendered.add_column(column, justify="left" if index == 0 else "right")
            for row in table.rows:
                rendered.add_row(*(format_cell(cell) for cell in row))
            out.print(rendered)
        if self.figures:
            out.print(
                "figures: " + ", ".join(f"{k} = {format_cell(v)}" for k, v in self.figures.items())
            )
        for line in self.conclusions:
            out.print(f"[bold]→[/] {line}")
        if json_path is not None:
            json_path.write_text(self.model_dump_json(indent=2), encoding="utf-8")


def format_cell(cell: Cell) -> str:
    """Numbers with thousands separators and sensible precision; text as is."""
    if isinstance(cell, str):
        return cell
    if isinstance(cell, int):
        return f"{cell:,}"
    if cell == 0 or abs(cell) >= 100:
        return f"{cell:,.0f}"
    if abs(cell) >= 10:
        return f"{cell:,.1f}"
    return f"{cell:.2f}" if abs(cell) >= 0.1 else f"{cell:.3g}"


def base_parser(description: str) -> argparse.ArgumentParser:
    """The options every benchmark takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="a small run that finishes in seconds (smoke test)"
    )
    parser.add_argument("--json", type=Path, help="also write the report as JSON to this file")
    return parser


def load_report(path: Path) -> Report:
    return Report.model_validate(json.loads(path.read_text(encoding="utf-8")))
