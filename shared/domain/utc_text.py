"""The one spelling of an instant that rated rows carry: UTC, ``YYYY-MM-DD HH:MM:SS.ffffff``.

A batch file may spell ``occurred_at`` in any RFC 3339 form (``…T12:00:00Z``,
``…T14:00:00.250+02:00``, up to nine fractional digits). The warehouse wants one form that
its loader can store without per-row work in the controller:

* it is exactly the text SQLAlchemy's ``DateTime`` stores in SQLite, so SQLite takes it as
  it is (before, the ``INSERT`` converted every row with ``strftime``: about 2.4 µs a row);
* PostgreSQL reads it into ``timestamptz`` in a transaction whose time zone is UTC (the
  loader sets it);
* its text order is its time order, and it has exactly microseconds, the precision both
  databases keep (PostgreSQL would round a longer fraction, Python truncates it).

The processor converts each transaction as it rates it, so the cost sits in the role that
scales out. A ``Z`` text with at most six fractional digits is rewritten by slicing (0.7 µs
a row). A ``±HH:MM`` offset moves the hours and minutes only, and a batch's instants fall in
few distinct minutes, so the UTC minute of each local minute and offset is worked out once
and the seconds copied (1.5 µs a row; parsing and formatting each instant costs 6 µs). Any
other text is parsed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

#: What a ``…SS[.f]Z`` text of each length lacks of six fractional digits (index: length - 20).
_PADDING = (".000000", "", "00000", "0000", "000", "00", "0", "")


def utc_text(at: datetime) -> str:
    """``at`` (aware) as the warehouse's UTC text. Raises ``ValueError`` for a naive datetime."""
    if at.tzinfo is None:
        raise ValueError(f"naive datetime {at.isoformat()}: give it a UTC offset")
    # isoformat, not strftime: strftime("%Y") does not pad years before 1000 on Linux.
    return at.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


def utc_text_of(rfc3339: str) -> str:
    """An RFC 3339 instant as the warehouse's UTC text. Raises ``ValueError`` if it is none.

    The fast path trusts the shape the initiator checked before accepting the text
    (``YYYY-MM-DDTHH:MM:SS``, then an optional fraction, then the offset): a ``Z`` text
    of 20 characters has no fraction, one of 22 to 27 has one of 1 to 6 digits. Anything
    else is parsed, and text without an offset is refused here too.
    """
    length = len(rfc3339)
    if rfc3339[-1:] == "Z" and (length == 20 or (21 < length < 28 and rfc3339[19] == ".")):
        return f"{rfc3339[:10]} {rfc3339[11:-1]}{_PADDING[length - 20]}"
    if (
        rfc3339[-6:-5] in _SIGNS
        and rfc3339[-3:-2] == ":"
        and (length == 25 or (26 < length < 33 and rfc3339[19] == "."))
    ):
        minute = _utc_minute(rfc3339[:16], rfc3339[-6:])
        return f"{minute}{rfc3339[16:-6]}{_PADDING[length - 25]}"
    return utc_text(datetime.fromisoformat(rfc3339))


_SIGNS = ("+", "-")


#: Rows come in file order, so a few recent minutes hit nearly always; 4,096 minutes (under
#: three days of one offset) take about 1 MB.
@lru_cache(maxsize=4096)
def _utc_minute(local_minute: str, offset: str) -> str:
    """``YYYY-MM-DD HH:MM`` in UTC of ``local_minute`` (``YYYY-MM-DDTHH:MM``) at ``offset``."""
    return utc_text(datetime.fromisoformat(f"{local_minute}:00{offset}"))[:16]
