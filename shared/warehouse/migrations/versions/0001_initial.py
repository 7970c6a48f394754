"""The initial warehouse: batches, charges, invoices and the applied-chunk marks.

Revision ID: 0001
Revises:
Create Date: 2025-11-30

Written by hand to read like the models (``shared/warehouse/models.py``); a test checks
that the two describe the same schema. Money columns are BIGINT minor units.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.String(64)
MONEY = sa.BigInteger()
#: shared.warehouse.types.UInt64: exact unsigned 64-bit (NUMERIC(20); text on SQLite).
UINT64 = sa.Numeric(20, 0).with_variant(sa.String(20), "sqlite")
#: shared.warehouse.types.UtcDateTime: stored in UTC.
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "batches",
        sa.Column("batch_id", ID, nullable=False),
        sa.Column("priority", sa.String(8), nullable=False),
        sa.Column("transactions", sa.BigInteger(), nullable=False),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("pricebook_version", ID, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("accepted_at", TIMESTAMP, nullable=False),
        sa.Column("completed_at", TIMESTAMP, nullable=True),
        sa.Column("control_transactions", sa.BigInteger(), nullable=False),
        sa.Column("control_quantity", sa.BigInteger(), nullable=False),
        sa.Column("control_id_checksum", UINT64, nullable=False),
        sa.Column("warehouse_transactions", sa.BigInteger(), nullable=True),
        sa.Column("warehouse_quantity", sa.BigInteger(), nullable=True),
        sa.Column("warehouse_id_checksum", UINT64, nullable=True),
        sa.Column("reconciled", sa.Boolean(), nullable=True),
        sa.PrimaryKeyConstraint("batch_id", name=op.f("pk_batches")),
        sa.CheckConstraint(
            "status IN ('accepted', 'processing', 'completed', 'failed')",
            name=op.f("ck_batches_status"),
        ),
        sa.CheckConstraint(
            "priority IN ('high', 'normal', 'low')", name=op.f("ck_batches_priority")
        ),
    )

    op.create_table(
        "charges",
        sa.Column("order_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("batch_id", ID, nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=False),
        sa.Column("transaction_id", ID, nullable=False),
        sa.Column("customer_id", ID, nullable=False),
        sa.Column("sku", ID, nullable=False),
        sa.Column("region", ID, nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("occurred_at", TIMESTAMP, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("unit_price", MONEY, nullable=False),
        sa.Column("gross", MONEY, nullable=False),
        sa.Column("discount", MONEY, nullable=False),
        sa.Column("net", MONEY, nullable=False),
        sa.Column("tax", MONEY, nullable=False),
        sa.Column("total", MONEY, nullable=False),
        sa.PrimaryKeyConstraint("order_id", name=op.f("pk_charges")),
        sa.ForeignKeyConstraint(
            ["batch_id"], ["batches.batch_id"], name=op.f("fk_charges_batch_id_batches")
        ),
        sa.UniqueConstraint(
            "batch_id", "transaction_id", name=op.f("uq_charges_batch_id_transaction_id")
        ),
    )
    op.create_index(op.f("ix_charges_batch_id_customer_id"), "charges", ["batch_id", "customer_id"])

    op.create_table(
        "invoices",
        sa.Column("batch_id", ID, nullable=False),
        sa.Column("customer_id", ID, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("lines", sa.BigInteger(), nullable=False),
        sa.Column("quantity", sa.BigInteger(), nullable=False),
        sa.Column("gross", MONEY, nullable=False),
        sa.Column("discount", MONEY, nullable=False),
        sa.Column("net", MONEY, nullable=False),
        sa.Column("tax", MONEY, nullable=False),
        sa.Column("total", MONEY, nullable=False),
        sa.PrimaryKeyConstraint("batch_id", "customer_id", name=op.f("pk_invoices")),
        sa.ForeignKeyConstraint(
            ["batch_id"], ["batches.batch_id"], name=op.f("fk_invoices_batch_id_batches")
        ),
    )

    op.create_table(
        "applied_chunks",
        sa.Column("batch_id", ID, nullable=False),
        sa.Column("chunk", sa.Integer(), nullable=False),
        sa.Column("applied_at", TIMESTAMP, nullable=False),
        sa.Column("transactions", sa.Integer(), nullable=False),
        sa.Column("processor", sa.String(128), nullable=False),
        sa.PrimaryKeyConstraint("batch_id", "chunk", name=op.f("pk_applied_chunks")),
        sa.ForeignKeyConstraint(
            ["batch_id"], ["batches.batch_id"], name=op.f("fk_applied_chunks_batch_id_batches")
        ),
    )


def downgrade() -> None:
    op.drop_table("applied_chunks")
    op.drop_table("invoices")
    op.drop_index(op.f("ix_charges_batch_id_customer_id"), table_name="charges")
    op.drop_table("charges")
    op.drop_table("batches")
