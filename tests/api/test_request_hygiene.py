"""Requests that are odd rather than slow: ambiguous framing, absurd numbers, a key replayed
at another priority. Each gets a clear answer at once and leaves nothing behind."""

from __future__ import annotations

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
