"""Two column types the dialects disagree on: an unsigned 64-bit integer and a UTC timestamp."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import DateTime, Dialect, Numeric, String
from sqlalchemy.types import TypeDecorator, TypeEngine

UINT64_LIMIT = 2**64


class UInt64(TypeDecorator[int]):
    """An unsigned 64-bit integer (the control totals' id checksum), exact on every dialect.

    SQL ``BIGINT`` is signed, so half the checksums would not fit. ``NUMERIC(20)`` holds
    them exactly on PostgreSQL, but SQLite gives a ``NUMERIC`` column above 2**63 a REAL
    value and loses the low bits — so on SQLite the column is the decimal text instead.
    Either way a SQL client shows the same number the Python code sees (a two's-complement
    ``BIGINT`` would have shown a negative number for half of them), and the column is
    only ever compared for equality.
    """

    impl = Numeric(20, 0)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(20))
        return dialect.type_descriptor(Numeric(20, 0))

    def process_bind_param(self, value: int | None, dialect: Dialect) -> object:
        if value is None:
            return None
        if not 0 <= value < UINT64_LIMIT:
            raise ValueError(f"{value} is not an unsigned 64-bit integer")
        return str(value) if dialect.name == "sqlite" else Decimal(value)

    def process_result_value(self, value: object, dialect: Dialect) -> int | None:
        return None if value is None else int(str(value))


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp, stored in UTC, read back aware (UTC) on every dialect.

    PostgreSQL has ``timestamptz``; SQLite has no time zones and SQLAlchemy would drop the
    offset silently, so values are converted to UTC first and naive values are refused.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()}: give it a UTC offset")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
