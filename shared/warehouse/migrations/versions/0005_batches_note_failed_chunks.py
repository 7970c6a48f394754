"""``batches`` gains ``has_failed_chunks``: a batch's tally reads the failures only if it has any.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

A failed chunk is recorded in the chunks table (``controller.failed_chunks``). Without a
flag, every tally of a batch not yet fully applied would query that table, on the chance
that a failure settled the batch: one storage request per chunk, almost always answering
"none". The controller that records a failure also sets this flag on the batch's row,
before it tallies, so a tally queries the chunks table only for a batch that has had one.

Rows written before this revision do not know: an open or failed batch is marked as
possibly failed (its tallies query the table as before), a completed one is not (it has
no failures that count).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

batches = sa.table(
    "batches",
    sa.column("status", sa.String),
    sa.column("has_failed_chunks", sa.Boolean),
)


def upgrade() -> None:
    # A plain ADD COLUMN (a constant default is allowed on SQLite): a batch-mode copy of
    # ``batches`` would be refused, since charges, invoices and applied marks refer to it.
    op.add_column(
        "batches",
        sa.Column("has_failed_chunks", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.execute(
        batches.update().where(batches.c.status != "completed").values(has_failed_chunks=sa.true())
    )


def downgrade() -> None:
    op.drop_column("batches", "has_failed_chunks")  # SQLite 3.35+ drops a column in place
