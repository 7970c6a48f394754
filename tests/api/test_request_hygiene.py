"""Requests that are odd rather than slow: ambiguous framing, absurd numbers, a key replayed
at another priority. Each gets a clear answer at once and leaves nothing behind."""

from __future__ import annotations

import tracemalloc

import pytest

from tests.api.batch_files import csv_file, rows
from tests.api.harness import CSV, JSONL, Api
from tests.api.test_hostile_clients import make_settings, nothing_kept, post_head
from tests.support.deployment_settings import SettingsFactory
from tests.support.live_initiator import body_of, read_until_closed, serving, status_of

__all__ = ["make_settings"]  # the live tests' fixture, shared with the hostile clients

HEADER = b"transaction_id,customer_id,sku,quantity,region,occurred_at\n"


def test_content_length_with_transfer_encoding_is_refused_before_the_body(
    make_settings: SettingsFactory,
) -> None:
    with serving(make_settings()) as live:
        with live.connect() as client:
            # No body at all: the answer must not wait for one.
            client.sendall(post_head(100, **{"Transfer-Encoding": "chunked"}))
            answer = read_until_closed(client, timeout=10)
        assert status_of(answer) == 400
        assert b"both Content-Length and Transfer-Encoding" in body_of(answer)
        assert nothing_kept(live)


@pytest.mark.anyio
async def test_a_number_of_thousands_of_digits_is_described_not_echoed(api: Api) -> None:
    digits = "9" * 5_000
    csv = HEADER + f"t1,c1,SEAT-PRO,{digits},EU,2026-01-01T00:00:00Z\n".encode()
    jsonl = (
        '{"transaction_id":"t1","customer_id":"c1","sku":"SEAT-PRO","quantity":'
        f'{digits},"region":"EU","occurred_at":"2026-01-01T00:00:00Z"}}\n'
    ).encode()

    from_csv = await api.post_batch(csv, CSV)
    from_jsonl = await api.post_batch(jsonl, JSONL)

    assert from_csv.status_code == 422
    assert from_csv.json()["problems"][0]["reason"] == (
        "quantity of 5,000 digits is out of range (1 to 1,000,000)"
    )
    assert from_jsonl.status_code == 400
    reason = from_jsonl.json()["problems"][0]["reason"]
    assert reason == "invalid JSON: a number with more than 4,300 digits"
    assert "sys." not in from_jsonl.text


@pytest.mark.anyio
async def test_a_key_replayed_at_another_priority_is_a_conflict(api: Api) -> None:
    body = csv_file(rows(3))
    headers = {**CSV, "Idempotency-Key": "replayed-at-another-priority"}
    first = await api.post_batch(body, headers, priority="high")
    same = await api.post_batch(body, headers, priority="high")
    other = await api.post_batch(body, headers, priority="low")

    assert first.status_code == 202
    assert (same.status_code, same.json()["batch_id"]) == (200, first.json()["batch_id"])
    assert other.status_code == 409
    assert "priority high, not low" in other.json()["detail"]


def _wide_batch(extra_columns: int, name_length: int = 1) -> bytes:
    """Six columns and ``extra_columns`` more, named ``x…`` (``name_length`` 0: unnamed)."""
    names = [f"x{n:0{name_length}d}" if name_length else "" for n in range(extra_columns)]
    header = ",".join([*HEADER.decode().strip().split(","), *names])
    row = ",".join(
        ["t1", "c1", "SEAT-PRO", "3", "EU", "2026-01-01T00:00:00Z", *[""] * extra_columns]
    )
    return f"{header}\n{row}\n".encode()


@pytest.mark.anyio
async def test_a_header_of_half_a_million_columns_is_refused_within_a_small_memory(
    api: Api,
) -> None:
    body = _wide_batch(500_000, name_length=0)  # a header of 0.5 MB, within the line limit
    tracemalloc.start()
    try:
        response = await api.post_batch(body, CSV)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert response.status_code == 400
    assert response.json()["problems"][0] == {
        "line": 1,
        "field": None,
        "reason": "the header has 500,006 columns; at most 1,024 are allowed (the six "
        "required ones, in any order, and others that are ignored)",
    }
    # The body is 1 MB; reading the header and refusing it may cost a few times that, not
    # the hundreds of MB of splitting every line into half a million fields.
    assert peak < 64 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


@pytest.mark.anyio
async def test_a_header_is_bounded_in_bytes_too_and_a_wide_one_within_bounds_is_taken(
    api: Api,
) -> None:
    too_long = await api.post_batch(_wide_batch(1_000, name_length=80), CSV)
    wide = await api.post_batch(_wide_batch(1_000), CSV)

    assert too_long.status_code == 400
    assert "at most 65,536 are allowed" in too_long.json()["problems"][0]["reason"]
    assert wide.status_code == 202
