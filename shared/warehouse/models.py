"""The warehouse tables: batches, charges, invoices, the applied-chunk marks and the event outbox.

Every amount is an integer of the currency's minor unit (``BIGINT``), never a float or a
decimal: the processors rate in integers and the warehouse only ever adds them. The schema
itself is created by the Alembic migrations in ``migrations/``; these models describe it for
queries, and a test checks that the two agree.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from shared.contracts.batch_status import WAREHOUSE_STATUSES, BatchStatus
from shared.domain.charges import INVOICE_SUMS
from shared.warehouse.types import UInt64, UtcDateTime

#: Batch, transaction, customer, SKU and region ids are 1-64 characters.
ID_LENGTH = 64
#: The longest callback URL a sender may give.
CALLBACK_LENGTH = 2048
BATCH_STATUSES = tuple(status.value for status in WAREHOUSE_STATUSES)
#: An applied mark's columns of the chunk's invoice sums, in :data:`INVOICE_SUMS` order.
MARK_SUMS = tuple(f"sum_{name}" for name in INVOICE_SUMS)


class Base(DeclarativeBase):
    # Named constraints, so that a later migration can drop or alter them by name on
    # every dialect (SQLite and PostgreSQL would otherwise invent different names).
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


class Amounts:
    """The amounts a charge carries and an invoice sums, in minor units of the currency."""

    gross: Mapped[int] = mapped_column(BigInteger)
    discount: Mapped[int] = mapped_column(BigInteger)
    net: Mapped[int] = mapped_column(BigInteger)
    tax: Mapped[int] = mapped_column(BigInteger)
    total: Mapped[int] = mapped_column(BigInteger)


class Batch(Base):
    """One accepted batch: what intake counted (control totals) and what the warehouse holds."""

    __tablename__ = "batches"
    __table_args__ = (
        CheckConstraint(f"status IN {BATCH_STATUSES!r}", name="status"),
        CheckConstraint("priority IN ('high', 'normal', 'low')", name="priority"),
    )

    batch_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    priority: Mapped[str] = mapped_column(String(8))
    transactions: Mapped[int] = mapped_column(BigInteger)
    chunks: Mapped[int] = mapped_column(Integer)
    pricebook_version: Mapped[str] = mapped_column(String(ID_LENGTH))
    status: Mapped[str] = mapped_column(String(16), default=BatchStatus.ACCEPTED.value)
    accepted_at: Mapped[datetime] = mapped_column(UtcDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # Taken at intake (shared.domain.transactions.ControlTotals) ...
    control_transactions: Mapped[int] = mapped_column(BigInteger)
    control_quantity: Mapped[int] = mapped_column(BigInteger)
    control_id_checksum: Mapped[int] = mapped_column(UInt64)
    # ... and computed from the charges at completion; null until then.
    warehouse_transactions: Mapped[int | None] = mapped_column(BigInteger)
    warehouse_quantity: Mapped[int | None] = mapped_column(BigInteger)
    warehouse_id_checksum: Mapped[int | None] = mapped_column(UInt64)
    #: null until the batch completes; then whether warehouse and control totals agree.
    reconciled: Mapped[bool | None]
    #: set when one of its chunks is recorded failed, so that a tally of a batch without
    #: failures never queries the chunks table for them (controller.completion).
    has_failed_chunks: Mapped[bool] = mapped_column(server_default=false())
    #: the sender's callback URL (``POST /batches?callback=``), copied from the batch record
    callback: Mapped[str | None] = mapped_column(String(CALLBACK_LENGTH))


class Charge(Amounts, Base):
    """One rated transaction. ``order_id`` comes from the blob-range allocator."""

    __tablename__ = "charges"
    __table_args__ = (
        # The exactly-once backstop: even a bug in the applied marks cannot land a
        # transaction of a batch twice.
        UniqueConstraint("batch_id", "transaction_id"),
        # No other index: each one costs every insert (migration 0003 says how much).
    )

    # On SQLite exactly INTEGER, so that it is the table's row id rather than a second
    # index every insert maintains (migration 0004); the same 64 bits as BIGINT.
    order_id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False
    )
    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.batch_id"))
    chunk: Mapped[int] = mapped_column(Integer)
    transaction_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    customer_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    sku: Mapped[str] = mapped_column(String(ID_LENGTH))
    region: Mapped[str] = mapped_column(String(ID_LENGTH))
    quantity: Mapped[int] = mapped_column(Integer)
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime)
    currency: Mapped[str] = mapped_column(String(3))
    unit_price: Mapped[int] = mapped_column(BigInteger)


class Invoice(Amounts, Base):
    """One customer's totals in one batch: the sums of its charges, written when the batch
    closes (controller.reconciliation), in the transaction that closes it."""

    __tablename__ = "invoices"

    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.batch_id"), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    currency: Mapped[str] = mapped_column(String(3))
    lines: Mapped[int] = mapped_column(BigInteger)
    quantity: Mapped[int] = mapped_column(BigInteger)


class AppliedChunk(Base):
    """The mark that a chunk's result is in the warehouse; its key makes the apply once-only."""

    __tablename__ = "applied_chunks"

    batch_id: Mapped[str] = mapped_column(ForeignKey("batches.batch_id"), primary_key=True)
    chunk: Mapped[int] = mapped_column(Integer, primary_key=True)
    applied_at: Mapped[datetime] = mapped_column(UtcDateTime)
    transactions: Mapped[int] = mapped_column(Integer)
    processor: Mapped[str] = mapped_column(String(128))
    # The chunk's partial id checksum (the sum of its transaction ids' hashes), written in
    # the transaction that loads its charges; a batch's is the sum over its chunks
    # (shared.warehouse.id_checksum_halves: two 32-bit halves, so that SQL can sum them).
    id_checksum_high: Mapped[int] = mapped_column(BigInteger)
    id_checksum_low: Mapped[int] = mapped_column(BigInteger)
    # The chunk's invoice sums (INVOICE_SUMS over all its rows, as the processor that rated
    # them summed them; MARK_SUMS), written with its charges: at close the batch's invoices
    # must add up to their sum over the batch's marks, figure by figure.
    sum_lines: Mapped[int] = mapped_column(BigInteger)
    sum_quantity: Mapped[int] = mapped_column(BigInteger)
    sum_gross: Mapped[int] = mapped_column(BigInteger)
    sum_discount: Mapped[int] = mapped_column(BigInteger)
    sum_net: Mapped[int] = mapped_column(BigInteger)
    sum_tax: Mapped[int] = mapped_column(BigInteger)
    sum_total: Mapped[int] = mapped_column(BigInteger)


class OutboxEvent(Base):
    """A batch event to publish (the outbox): written in the transaction that closes the
    batch (or, for an abandoned batch, which the warehouse never sees, when the initiator
    reports it), published by the controller's relay, which sets ``published_at`` only after
    the bus took it (controller.events). One row per outcome: the id is derived from it.
    ``batch_id`` is no foreign key, for that abandoned batch."""

    __tablename__ = "batch_events"
    __table_args__ = (
        UniqueConstraint("batch_id", "type"),
        # The relay's question, "what is not published yet", reads only this index.
        Index("ix_batch_events_pending", "published_at", "created_at"),
    )

    event_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    batch_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    type: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    #: the CloudEvent, exactly the bytes published and signed (shared.contracts.batch_event)
    body: Mapped[str] = mapped_column(Text)
    published_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    #: the sender's webhook URL, for an event whose batch has no ``batches`` row (abandoned);
    #: else null, and the relay reads the row's
    callback: Mapped[str | None] = mapped_column(String(CALLBACK_LENGTH))


class WebhookDelivery(Base):
    """One event to one URL: its state and when it is next tried (controller.events.webhooks)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "url"),
        Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
    )

    delivery_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(ForeignKey("batch_events.event_id"))
    url: Mapped[str] = mapped_column(String(CALLBACK_LENGTH))
    #: ``pending`` (tried at ``next_attempt_at``), ``delivered`` or ``gave_up``
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class DeliveryAttempt(Base):
    """One HTTP request of a delivery and its answer (``billing events deliveries``)."""

    __tablename__ = "webhook_attempts"

    attempt_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("webhook_deliveries.delivery_id"))
    attempted_at: Mapped[datetime] = mapped_column(UtcDateTime)
    #: the HTTP status, or null when no answer came (refused, timed out, URL not allowed)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(512))
