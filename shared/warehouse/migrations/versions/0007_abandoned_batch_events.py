"""``batch_events`` gains ``callback``: the webhook URL of an event whose batch has no row.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

An abandoned batch never reaches ``batches`` (the initiator gave up on it before accepting
it), so its ``billing.batch.abandoned`` event carries its sender's callback itself. The
relay queues a delivery to it, or else to the callback of the batch's row.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("batch_events", sa.Column("callback", sa.String(2048), nullable=True))


def downgrade() -> None:
    op.drop_column("batch_events", "callback")
