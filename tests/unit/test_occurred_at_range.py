"""``occurred_at`` is valid only if the warehouse can store it: its UTC instant in years 1-9999.

The warehouse keeps every timestamp in UTC (``UtcDateTime``). A well-formed local time near
the ends of the calendar can leave that range once converted; such a line is refused with
its line number, and the last storable instants on either side are still taken.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.warehouse.types import UtcDateTime
from tests.unit.batch_files import (
    accepted,
    csv_body,
    jsonl_body,
    only_problem,
    record,
    rejected,
    row,
    transaction,
)

UNSTORABLE = [
    "9999-12-31T23:59:59-23:59",  # 10000-01-01T23:58:59Z
    "9999-12-31T12:00:00-12:00",  # 10000-01-01T00:00:00Z
    "0001-01-01T00:00:00+00:01",  # 0000-12-31T23:59:00Z
    "0001-01-01T10:00:00.5+23:59",
]
STORABLE_EDGES = [
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59+23:59",  # east of UTC: earlier in UTC
    "9999-12-31T11:59:59-12:00",  # 9999-12-31T23:59:59Z
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00-23:59",  # west of UTC: later in UTC
]


@pytest.mark.parametrize("occurred_at", UNSTORABLE)
def test_a_local_time_outside_the_utc_range_is_refused_with_its_line(occurred_at: str) -> None:
    body = csv_body(row("T1"), row("T2", occurred_at=occurred_at), row("T3"))
    rejection = rejected(body)
    assert rejection.status_code == 422
    line, field, reason = only_problem(rejection)
    assert (line, field) == (3, "occurred_at")
    assert reason.startswith(f"occurred_at {occurred_at!r} is outside the range the warehouse")


@pytest.mark.parametrize("occurred_at", UNSTORABLE)
def test_json_lines_refuse_it_too(occurred_at: str) -> None:
    body = jsonl_body(record(transaction_id="T1", occurred_at=occurred_at))
    rejection = rejected(body, content_type="application/x-ndjson")
    assert only_problem(rejection)[:2] == (1, "occurred_at")


@pytest.mark.parametrize("occurred_at", STORABLE_EDGES)
def test_the_last_storable_instants_are_accepted_and_fit_the_warehouse_type(
    occurred_at: str,
) -> None:
    (parsed,) = accepted(csv_body(row("T1", occurred_at=occurred_at)))
    assert parsed == (2, transaction("T1", occurred_at=occurred_at))
    stored = UtcDateTime().process_bind_param(parsed[1].occurred_at, dialect=None)  # type: ignore[arg-type]
    assert stored == datetime.fromisoformat(occurred_at).astimezone(UTC)


@pytest.mark.parametrize("occurred_at", UNSTORABLE)
def test_what_is_refused_is_what_the_warehouse_type_cannot_take(occurred_at: str) -> None:
    with pytest.raises(OverflowError):
        UtcDateTime().process_bind_param(datetime.fromisoformat(occurred_at), dialect=None)  # type: ignore[arg-type]
