"""``charges`` loses its ``(batch_id, customer_id)`` index: the reduce pays per row, the close once.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Every charge the pipeline rates is inserted into ``charges``, and each insert maintained
this index as well as the primary key and the unique ``(batch_id, transaction_id)``: on
SQLite it was about 3.6 µs of the controller's CPU a row, a third of the whole insert
(``python -m bench.charge_load`` measures the insert). Its one reader was a batch's close,
which sums the batch's charges per customer once: that query now sorts the batch's rows
(found through the unique key, whose first column is ``batch_id``) instead of walking the
index, once per batch. Per-customer
figures of a batch are in ``invoices``, which keeps its primary key ``(batch_id,
customer_id)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = "ix_charges_batch_id_customer_id"


def upgrade() -> None:
    op.drop_index(op.f(_INDEX), table_name="charges")


def downgrade() -> None:
    op.create_index(op.f(_INDEX), "charges", ["batch_id", "customer_id"])
