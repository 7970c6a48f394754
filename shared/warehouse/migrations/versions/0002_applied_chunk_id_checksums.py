"""Each applied chunk carries its partial id checksum, so a batch closes without re-reading ids.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

``applied_chunks`` gains ``id_checksum_high`` and ``id_checksum_low``: the two 32-bit halves
of the sum of the chunk's transaction id hashes (``shared.warehouse.id_checksum_halves``).
Chunks applied before this revision get theirs computed from their charges here, so a batch
that was open during the upgrade still reconciles. The hash is blake2b, which no SQL
dialect computes: the backfill runs in Python and therefore needs a live connection
(``billing warehouse upgrade``, or a controller starting), not ``alembic upgrade --sql``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter

import sqlalchemy as sa
from alembic import op

from shared.domain.transactions import id_checksum_of
from shared.warehouse.id_checksum_halves import split

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The charges' ids are read this many at a time during the backfill.
BACKFILL_YIELD_PER = 10_000

applied_chunks = sa.table(
    "applied_chunks",
    sa.column("batch_id", sa.String),
    sa.column("chunk", sa.Integer),
    sa.column("id_checksum_high", sa.BigInteger),
    sa.column("id_checksum_low", sa.BigInteger),
)
charges = sa.table(
    "charges",
    sa.column("batch_id", sa.String),
    sa.column("chunk", sa.Integer),
    sa.column("transaction_id", sa.String),
)


def upgrade() -> None:
    if op.get_context().as_sql:
        raise RuntimeError(
            "revision 0002 hashes the applied chunks' transaction ids in Python: run it on a "
            "live connection (`billing warehouse upgrade`), not as offline SQL"
        )
    with op.batch_alter_table("applied_chunks") as batch:
        batch.add_column(sa.Column("id_checksum_high", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("id_checksum_low", sa.BigInteger(), nullable=True))
    _backfill(op.get_bind())
    with op.batch_alter_table("applied_chunks") as batch:
        batch.alter_column("id_checksum_high", existing_type=sa.BigInteger(), nullable=False)
        batch.alter_column("id_checksum_low", existing_type=sa.BigInteger(), nullable=False)


def _backfill(connection: sa.Connection) -> None:
    """Every applied chunk's halves, from the ids of its charges (0 for a chunk without any)."""
    connection.execute(sa.update(applied_chunks).values(id_checksum_high=0, id_checksum_low=0))
    ids = connection.execute(
        sa.select(charges.c.batch_id, charges.c.chunk, charges.c.transaction_id).order_by(
            charges.c.batch_id, charges.c.chunk
        ),
        execution_options={"yield_per": BACKFILL_YIELD_PER},
    )
    halves = []  # one entry per chunk, written once the ids have all been read
    for (batch_id, chunk), rows in groupby(ids, key=itemgetter(0, 1)):
        high, low = split(id_checksum_of(row.transaction_id for row in rows))
        halves.append({"b": batch_id, "c": chunk, "high": high, "low": low})
    if halves:
        connection.execute(
            sa.update(applied_chunks)
            .where(
                applied_chunks.c.batch_id == sa.bindparam("b"),
                applied_chunks.c.chunk == sa.bindparam("c"),
            )
            .values(id_checksum_high=sa.bindparam("high"), id_checksum_low=sa.bindparam("low")),
            halves,
        )


def downgrade() -> None:
    with op.batch_alter_table("applied_chunks") as batch:
        batch.drop_column("id_checksum_low")
        batch.drop_column("id_checksum_high")
