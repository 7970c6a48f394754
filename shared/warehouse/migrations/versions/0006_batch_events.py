"""The event outbox and webhook deliveries; ``batches`` gains the sender's ``callback``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

``batch_events`` holds one row per batch outcome, written in the transaction that closes
the batch; the controller's relay publishes it and sets ``published_at``.
``webhook_deliveries`` is one event to one URL with its retry state, ``webhook_attempts``
each HTTP request made for it (controller.events).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from shared.warehouse.types import UtcDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("batches", sa.Column("callback", sa.String(2048), nullable=True))
    op.create_table(
        "batch_events",
        sa.Column("event_id", sa.String(36), nullable=False),
        sa.Column("batch_id", sa.String(64), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("published_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("event_id", name="pk_batch_events"),
        sa.UniqueConstraint("batch_id", "type", name="uq_batch_events_batch_id_type"),
    )
    op.create_index("ix_batch_events_pending", "batch_events", ["published_at", "created_at"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("delivery_id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("event_id", sa.String(36), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UtcDateTime(), nullable=True),
        sa.Column("delivered_at", UtcDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["batch_events.event_id"],
            name="fk_webhook_deliveries_event_id_batch_events",
        ),
        sa.PrimaryKeyConstraint("delivery_id", name="pk_webhook_deliveries"),
        sa.UniqueConstraint("event_id", "url", name="uq_webhook_deliveries_event_id_url"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["state", "next_attempt_at"])
    op.create_table(
        "webhook_attempts",
        sa.Column("attempt_id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("attempted_at", UtcDateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(512), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["webhook_deliveries.delivery_id"],
            name="fk_webhook_attempts_delivery_id_webhook_deliveries",
        ),
        sa.PrimaryKeyConstraint("attempt_id", name="pk_webhook_attempts"),
    )


def downgrade() -> None:
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_deliveries_due", "webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_batch_events_pending", "batch_events")
    op.drop_table("batch_events")
    op.drop_column("batches", "callback")
