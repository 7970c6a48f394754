"""Each applied chunk carries its invoice sums; invoices are written when the batch closes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06

``applied_chunks`` gains ``sum_lines`` … ``sum_total``: the chunk's invoice figures summed
over all its rows, as the processor that rated them summed them. The close writes a batch's
invoices from its charges and checks them against the sum of these over the batch's marks
(``controller.reconciliation``). Chunks applied before this revision get theirs from their
charges here, so a batch open during the upgrade still closes; for those chunks the check
compares the charges with themselves. The invoices an open batch already holds (running
sums of its chunks so far) are left: its close replaces them.

Downgrading drops the columns and, for every open batch, writes the invoices of the
charges applied so far, which the older reducer then adds each further chunk to.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FIGURES = ("lines", "quantity", "gross", "discount", "net", "tax", "total")
#: Each figure of a charge as summed: a line counts 1.
_CHARGE_FIGURE = {"lines": "1", **{name: name for name in FIGURES[1:]}}
_OPEN = "('accepted', 'processing')"


def upgrade() -> None:
    with op.batch_alter_table("applied_chunks") as batch:
        for name in FIGURES:
            batch.add_column(sa.Column(f"sum_{name}", sa.BigInteger(), nullable=True))
    sums = ", ".join(
        f"sum_{name} = (SELECT coalesce(sum({_CHARGE_FIGURE[name]}), 0) FROM charges "
        "WHERE charges.batch_id = applied_chunks.batch_id "
        "AND charges.chunk = applied_chunks.chunk)"
        for name in FIGURES
    )
    op.execute(f"UPDATE applied_chunks SET {sums}")
    with op.batch_alter_table("applied_chunks") as batch:
        for name in FIGURES:
            batch.alter_column(f"sum_{name}", existing_type=sa.BigInteger(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("applied_chunks") as batch:
        for name in reversed(FIGURES):
            batch.drop_column(f"sum_{name}")
    open_batches = f"SELECT batch_id FROM batches WHERE status IN {_OPEN}"
    op.execute(f"DELETE FROM invoices WHERE batch_id IN ({open_batches})")
    figures = ", ".join("count(*)" if name == "lines" else f"sum({name})" for name in FIGURES)
    op.execute(
        f"INSERT INTO invoices (batch_id, customer_id, currency, {', '.join(FIGURES)}) "
        f"SELECT batch_id, customer_id, min(currency), {figures} FROM charges "
        f"WHERE batch_id IN ({open_batches}) GROUP BY batch_id, customer_id"
    )
