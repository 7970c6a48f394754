"""Tables that fit the console by leaving columns out, never by cutting a cell.

Rich squeezes a table wider than the terminal by truncating cells (``20261205-0031…``),
which loses exactly what a reader copies: batch ids, customer ids. Instead each table
lists its optional columns from least to most useful, and :func:`fitted` leaves them out
one by one until the table's natural width fits. Identifiers are never optional.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rich.console import Console, JustifyMethod, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Row = TypeVar("Row")

UNBOUNDED = 100_000
#: Builds the table without the named columns.
Builder = Callable[[frozenset[str]], Table]


def fitted(console: Console, build: Builder, optional: Sequence[str]) -> Table:
    """``build(left_out)`` with the fewest of ``optional`` left out (in that order) for its
    rows to fit ``console``'s width unwrapped; all of them if nothing less fits."""
    left_out: list[str] = []
    table = build(frozenset())
    for name in optional:
        if natural_width(console, table) <= console.width:
            break
        left_out.append(name)
        table = build(frozenset(left_out))
    return table


def natural_width(console: Console, table: Table) -> int:
    """The width the table takes when nothing in it wraps."""
    unbounded = console.options.update_width(UNBOUNDED)  # Measurement clamps to the width
    return Measurement.get(console, unbounded, table).maximum


@dataclass(frozen=True)
class Column(Generic[Row]):
    """A column: its header, how a row shows in it, and its name in a drop order (the
    header unless given: a bar's column has none)."""

    header: str
    cell: Callable[[Row], RenderableType]
    justify: JustifyMethod = "right"
    key: str | None = None

    @property
    def name(self) -> str:
        return self.key or self.header


def column_table(
    console: Console,
    columns: Sequence[Column[Row]],
    rows: Sequence[Row],
    *,
    drop_order: Sequence[str] = (),
    empty: str = "",
    **table_options: Any,
) -> Table:
    """A table of ``rows`` fitted to ``console``: the columns named in ``drop_order``
    (least useful first) are left out as far as needed. No cell is wrapped or cut."""

    def build(left_out: frozenset[str]) -> Table:
        shown = [c for c in columns if c.name not in left_out]
        table = Table(**table_options)
        for column in shown:
            table.add_column(column.header, justify=column.justify, no_wrap=True)
        for row in rows:
            table.add_row(*(column.cell(row) for column in shown))
        if not rows and empty:
            table.add_row(Text(empty, style="dim"))
        return table

    return fitted(console, build, drop_order)
