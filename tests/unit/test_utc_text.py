"""The warehouse's UTC text of an instant: what SQLAlchemy's SQLite ``DateTime`` stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.utc_text import utc_text, utc_text_of


@st.composite
def rfc3339_spellings(draw: st.DrawFn) -> str:
    """What the batch file accepts: Z or ±HH:MM, and 0 to 9 fractional digits."""
    when = draw(
        st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30))
    ).replace(microsecond=0)
    digits = draw(st.integers(0, 9))
    fraction = f".{draw(st.integers(0, 10**digits - 1)):0{digits}d}" if digits else ""
    minutes = draw(st.integers(-(24 * 60 - 1), 24 * 60 - 1))
    if minutes == 0 and draw(st.booleans()):
        offset = "Z"
    else:
        sign, value = ("-" if minutes < 0 else "+"), abs(minutes)
        offset = f"{sign}{value // 60:02d}:{value % 60:02d}"
    return when.isoformat() + fraction + offset


def sqlalchemy_sqlite_text(at: datetime) -> str:
    """The text SQLAlchemy's SQLite ``DateTime`` stores for a UTC datetime (its format)."""
    return (
        f"{at.year:04d}-{at.month:02d}-{at.day:02d} "
        f"{at.hour:02d}:{at.minute:02d}:{at.second:02d}.{at.microsecond:06d}"
    )


@settings(max_examples=1000, deadline=None)
@given(rfc3339_spellings())
def test_any_spelling_becomes_the_utc_text_of_the_instant_python_reads(spelling: str) -> None:
    expected = datetime.fromisoformat(spelling).astimezone(UTC)
    assert utc_text_of(spelling) == sqlalchemy_sqlite_text(expected), spelling
    assert utc_text(datetime.fromisoformat(spelling)) == utc_text_of(spelling)


@pytest.mark.parametrize(
    ("spelling", "text"),
    [
        ("2024-06-01T12:00:00Z", "2024-06-01 12:00:00.000000"),
        ("2024-06-01T12:00:00.5Z", "2024-06-01 12:00:00.500000"),
        ("2024-06-01T12:00:00.123456Z", "2024-06-01 12:00:00.123456"),
        ("2024-06-01T12:00:00.9999999Z", "2024-06-01 12:00:00.999999"),  # truncated
        ("2024-06-01T00:30:00+02:00", "2024-05-31 22:30:00.000000"),
        ("2024-06-01T23:45:00.25-01:30", "2024-06-02 01:15:00.250000"),
        ("2024-12-31T23:59:59.1234567-00:01", "2025-01-01 00:00:59.123456"),  # truncated
        ("0005-01-01T00:30:00+00:00", "0005-01-01 00:30:00.000000"),  # the year padded
    ],
)
def test_examples(spelling: str, text: str) -> None:
    assert utc_text_of(spelling) == text


def test_an_instant_without_an_offset_is_refused() -> None:
    with pytest.raises(ValueError, match="offset"):
        utc_text_of("2024-06-01T12:00:00")
    with pytest.raises(ValueError, match="offset"):
        utc_text(datetime(2024, 6, 1))


def test_an_aware_datetime_in_any_zone() -> None:
    at = datetime(2024, 6, 1, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert utc_text(at) == "2024-06-01 00:00:00.000000"
