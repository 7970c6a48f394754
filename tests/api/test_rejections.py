"""Every class of bad batch file gets its 4xx, names the right line, and leaves no trace.

"No trace" is checked the strong way: every container, queue and table of the test's
account (blobs, depths, entities) is listed before and after the bad request and compared,
and the trigger topic must have carried nothing. The parser's own unit tests cover the
reasons in detail; here each class is mapped through the whole HTTP stack once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from shared import meter
from tests.api.batch_files import COLUMNS, csv_file, gzipped, jsonl_file, row, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import AUTH, Api, started_api

pytestmark = pytest.mark.anyio

HEADER = ",".join(COLUMNS)
GOOD = csv_file(rows(3))  # header, then lines 2-4
BAD_LINE = 4  # the line the single-line cases below break


def with_line(line: str) -> bytes:
    """A CSV whose lines 2-3 are valid and whose line 4 is ``line``."""
    return csv_file(rows(2)) + line.encode() + b"\n"


def with_field(**overrides: str) -> bytes:
    return csv_file([row(0), row(1), row(2, **overrides)])


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    status: int
    line: int | None
    column: str | None = None
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/csv"})


JSONL = {"Content-Type": "application/x-ndjson"}
_GOOD_JSON = jsonl_file(rows(2)).decode()

CASES = [
    Case("empty body", b"", 400, None),
    Case("header only", f"{HEADER}\n".encode(), 400, None),
    Case("missing column", csv_file(rows(2), columns=COLUMNS[:-1]), 400, 1, "occurred_at"),
    Case(
        "misspelled column",
        csv_file(rows(2)).replace(b"customer_id", b"customer", 1),
        400,
        1,
        "customer_id",
    ),
    Case("duplicated column", csv_file(rows(2), columns=(*COLUMNS, "sku")), 400, 1, "sku"),
    Case("too few fields", with_line("tx-9,cust-1,SEAT-PRO,1"), 422, BAD_LINE),
    Case("zero quantity", with_field(quantity="0"), 422, BAD_LINE, "quantity"),
    Case("negative quantity", with_field(quantity="-3"), 422, BAD_LINE, "quantity"),
    Case("too large quantity", with_field(quantity="1000001"), 422, BAD_LINE, "quantity"),
    Case("decimal quantity", with_field(quantity="2.5"), 422, BAD_LINE, "quantity"),
    Case("non-numeric quantity", with_field(quantity="ten"), 422, BAD_LINE, "quantity"),
    Case("empty quantity", with_field(quantity=""), 422, BAD_LINE, "quantity"),
    Case("empty transaction id", with_field(transaction_id=""), 422, BAD_LINE, "transaction_id"),
    Case("too long id", with_field(transaction_id="x" * 65), 422, BAD_LINE, "transaction_id"),
    Case("illegal id char", with_field(transaction_id="tx/1"), 422, BAD_LINE, "transaction_id"),
    Case(
        "duplicate transaction id",
        with_field(transaction_id=row(0)["transaction_id"]),
        422,
        BAD_LINE,
        "transaction_id",
    ),
    Case("empty customer", with_field(customer_id=""), 422, BAD_LINE, "customer_id"),
    Case("unknown sku", with_field(sku="SEAT-GOLD"), 422, BAD_LINE, "sku"),
    Case("unknown region (case)", with_field(region="eu"), 422, BAD_LINE, "region"),
    Case(
        "timestamp without offset",
        with_field(occurred_at="2025-03-01T10:00:00"),
        422,
        BAD_LINE,
        "occurred_at",
    ),
    Case(
        "impossible date",
        with_field(occurred_at="2025-02-30T10:00:00Z"),
        422,
        BAD_LINE,
        "occurred_at",
    ),
    Case(
        "non-UTF-8 bytes",
        csv_file(rows(2)) + b"tx-9,c\xff,SEAT-PRO,1,EU,2025-03-01T10:00:00Z\n",
        400,
        BAD_LINE,
    ),
    Case(
        "NUL byte",
        csv_file(rows(2)) + b"tx-9,c\x00,SEAT-PRO,1,EU,2025-03-01T10:00:00Z\n",
        400,
        BAD_LINE,
    ),
    Case(
        "unbalanced quote",
        with_line('tx-9,"cust,SEAT-PRO,1,EU,2025-03-01T10:00:00Z'),
        400,
        BAD_LINE,
    ),
    Case(
        "truncated gzip",
        gzipped(csv_file(rows(200)))[:-40],
        400,
        None,
        headers={"Content-Type": "text/csv", "Content-Encoding": "gzip"},
    ),
    Case(
        "garbage gzip",
        b"\x1f\x8b\x08\x00" + b"not really deflate data" * 4,
        400,
        None,
        headers={"Content-Type": "text/csv", "Content-Encoding": "gzip"},
    ),
    Case(
        "invalid JSON line", (_GOOD_JSON + '{"transaction_id": \n').encode(), 400, 3, headers=JSONL
    ),
    Case("JSON line not an object", (_GOOD_JSON + "[1, 2]\n").encode(), 422, 3, headers=JSONL),
    Case(
        "boolean quantity",
        (
            _GOOD_JSON + jsonl_file([row(5)]).decode().replace('"quantity":6', '"quantity":true')
        ).encode(),
        422,
        3,
        "quantity",
        headers=JSONL,
    ),
    Case(
        "unsupported content type",
        GOOD,
        415,
        None,
        "Content-Type",
        {"Content-Type": "application/xml"},
    ),
    Case(
        "unsupported content encoding",
        GOOD,
        415,
        None,
        "Content-Encoding",
        {"Content-Type": "text/csv", "Content-Encoding": "br"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_bad_batch_is_rejected_with_its_line_and_leaves_no_trace(
    api: Api, case: Case
) -> None:
    before = api.trace()

    response = await api.post_batch(case.body, {**AUTH, **case.headers})

    assert response.status_code == case.status, response.text
    body = response.json()
    assert body["status"] == case.status
    first = body["problems"][0]
    assert (first["line"], first["field"] if case.column else None) == (case.line, case.column)
    assert first["reason"]
    assert api.trace() == before
    assert api.triggers(wait=0.05) == []


async def test_invalid_priority_is_422_with_a_clear_message(api: Api) -> None:
    before = api.trace()
    response = await api.post_batch(GOOD, {**AUTH, "Content-Type": "text/csv"}, priority="urgent")
    assert response.status_code == 422
    problem = response.json()["problems"][0]
    assert problem["field"] == "query.priority"
    assert "'high', 'normal' or 'low'" in problem["reason"]
    assert api.trace() == before


async def test_bad_line_deep_inside_a_200k_line_file(make_settings: SettingsFactory) -> None:
    """Chunks before the bad line were already stored: they must be gone after the 422."""
    bad_line = 150_001
    good = rows(200_000)
    good[bad_line - 2] = row(bad_line - 2, region="Mars")
    async with started_api(make_settings(chunk_size=2000)) as api:
        before, requests_before = api.trace(), meter.snapshot()
        response = await api.post_batch(csv_file(good), {**AUTH, "Content-Type": "text/csv"})
        assert response.status_code == 422, response.text
        problems = response.json()["problems"]
        assert [(p["line"], p["field"]) for p in problems] == [(bad_line, "region")]
        assert api.trace() == before
        # The 74 full chunks before the bad line were stored while streaming, then deleted.
        requests = meter.diff(meter.snapshot(), requests_before)
        assert requests.get("blob.put", 0) >= 74
        assert requests.get("blob.delete", 0) >= 74
        assert api.triggers(wait=0.05) == []


async def _streamed(data: bytes, piece: int = 256) -> AsyncIterator[bytes]:
    for start in range(0, len(data), piece):
        yield data[start : start + piece]


async def test_body_over_the_limit_is_413_from_content_length(
    make_settings: SettingsFactory,
) -> None:
    async with started_api(make_settings(max_body_bytes=1000)) as api:
        before = api.trace()
        body = csv_file(rows(100))
        response = await api.post_batch(body, {**AUTH, "Content-Type": "text/csv"})
        assert response.status_code == 413
        assert "1,000 bytes" in response.json()["problems"][0]["reason"]
        assert api.trace() == before


async def test_body_over_the_limit_is_413_while_streaming(make_settings: SettingsFactory) -> None:
    """No Content-Length (chunked): the limit is enforced on the bytes as they arrive."""
    async with started_api(make_settings(max_body_bytes=5000, chunk_size=5)) as api:
        before = api.trace()
        response = await api.client.post(
            "/batches",
            content=_streamed(csv_file(rows(500))),
            headers={**AUTH, "Content-Type": "text/csv"},
        )
        assert "content-length" not in {k.lower() for k in response.request.headers}
        assert response.status_code == 413
        assert api.trace() == before


async def test_gzip_that_inflates_past_the_limit_is_413(make_settings: SettingsFactory) -> None:
    async with started_api(make_settings(max_decompressed_bytes=20_000)) as api:
        before = api.trace()
        body = gzipped(csv_file(rows(2000)))
        assert len(body) < 20_000
        headers = {**AUTH, "Content-Type": "text/csv", "Content-Encoding": "gzip"}
        response = await api.post_batch(body, headers)
        assert response.status_code == 413
        assert api.trace() == before


async def test_unauthenticated_batch_leaves_no_trace(api: Api) -> None:
    before = api.trace()
    response = await api.post_batch(GOOD, {"Content-Type": "text/csv"})
    assert response.status_code == 401
    assert api.trace() == before
    assert api.triggers(wait=0.05) == []
