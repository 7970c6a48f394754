"""Good batch files are accepted; their chunks hold exactly their transactions; the work is
spread over the priority's partitions; one trigger announces each batch."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import pytest

from shared.contracts.chunk_payload import NumberedTransaction
from shared.contracts.messages import KIND_PROPERTY, PRIORITY_PROPERTY, TriggerEvent
from shared.domain.pricebook import sample_pricebook
from shared.domain.transactions import ControlTotalsBuilder
from tests.api.batch_files import COLUMNS, Row, csv_file, expected, gzipped, jsonl_file, row, rows
from tests.api.harness import AUTH, Api
from tests.api.observe import payload_rows, queued_work_items

pytestmark = pytest.mark.anyio

ITEMS = rows(25)  # three chunks of 10, 10 and 5 at the tests' chunk size


@dataclass(frozen=True)
class Variant:
    name: str
    body: bytes
    headers: dict[str, str]
    items: list[Row]
    first_line: int = 2


def _quoted(items: list[Row]) -> bytes:
    lines = [",".join(f'"{c}"' for c in COLUMNS)]
    lines += [",".join(f'"{item[c]}"' for c in COLUMNS) for item in items]
    return ("\n".join(lines) + "\n").encode()


_OFFSET_ITEMS = [row(n, occurred_at=f"2025-03-01T23:59:{n:02d}.123456-05:30") for n in range(12)]
_REORDERED = tuple(reversed(COLUMNS))
CSV_TYPE = {"Content-Type": "text/csv"}

VARIANTS = [
    Variant("plain CSV", csv_file(ITEMS), CSV_TYPE, ITEMS),
    Variant("CRLF line endings", csv_file(ITEMS, newline="\r\n"), CSV_TYPE, ITEMS),
    Variant("UTF-8 BOM", b"\xef\xbb\xbf" + csv_file(ITEMS), CSV_TYPE, ITEMS),
    Variant(
        "extra columns",
        csv_file(
            [{**item, "note": "hello", "source": "erp"} for item in ITEMS],
            columns=("note", *COLUMNS, "source"),
        ),
        CSV_TYPE,
        ITEMS,
    ),
    Variant("reordered columns", csv_file(ITEMS, columns=_REORDERED), CSV_TYPE, ITEMS),
    Variant("quoted fields", _quoted(ITEMS), CSV_TYPE, ITEMS),
    Variant("no final newline", csv_file(ITEMS, final_newline=False), CSV_TYPE, ITEMS),
    Variant(
        "gzip declared",
        gzipped(csv_file(ITEMS)),
        {"Content-Type": "text/csv", "Content-Encoding": "gzip"},
        ITEMS,
    ),
    Variant("gzip sniffed", gzipped(csv_file(ITEMS)), {"Content-Type": "application/gzip"}, ITEMS),
    Variant("JSON Lines", jsonl_file(ITEMS), {"Content-Type": "application/x-ndjson"}, ITEMS, 1),
    Variant(
        "JSON Lines sniffed",
        jsonl_file(ITEMS),
        {"Content-Type": "application/octet-stream"},
        ITEMS,
        1,
    ),
    Variant("fractional seconds, non-UTC offset", csv_file(_OFFSET_ITEMS), CSV_TYPE, _OFFSET_ITEMS),
]


def _comparable(rows_: list[NumberedTransaction]) -> list[tuple[object, ...]]:
    """Rows with the timestamp as text, so that a lost offset would show."""
    return [
        (
            line,
            tx.transaction_id,
            tx.customer_id,
            tx.sku,
            tx.quantity,
            tx.region,
            tx.occurred_at.isoformat(),
        )
        for line, tx in rows_
    ]


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
async def test_good_variant_is_accepted_and_chunks_hold_exactly_its_transactions(
    api: Api, variant: Variant
) -> None:
    response = await api.post_batch(variant.body, {**AUTH, **variant.headers}, priority="low")

    assert response.status_code == 202, response.text
    answer = response.json()
    count = len(variant.items)
    assert answer["transactions"] == count
    assert answer["chunks"] == -(-count // api.settings.chunk_size)
    assert answer["priority"] == "low"
    assert answer["status_url"].endswith(f"/batches/{answer['batch_id']}")
    assert response.headers["location"] == answer["status_url"]
    stored = payload_rows(api.services.storage, api.settings, answer["batch_id"])
    assert _comparable(stored) == _comparable(expected(variant.items, variant.first_line))


async def test_status_shows_what_is_known_after_acceptance(api: Api) -> None:
    response = await api.post_batch(csv_file(ITEMS), {**AUTH, **CSV_TYPE}, priority="high")
    batch_id = response.json()["batch_id"]

    status = await api.client.get(f"/batches/{batch_id}", headers=AUTH)

    assert status.status_code == 200
    view = status.json()
    totals = ControlTotalsBuilder()
    for item in ITEMS:
        totals.add(item["transaction_id"], int(item["quantity"]))
    assert view["batch_id"] == batch_id
    assert view["status"] == "accepted"
    assert view["priority"] == "high"
    assert view["transactions"] == len(ITEMS)
    assert view["chunks"] == {"total": 3, "rated": 0, "applied": 0, "failed": 0, "in_flight": 3}
    assert view["control_totals"] == totals.build().model_dump()
    assert view["pricebook_version"] == sample_pricebook().version_hash()
    assert view["reconciled"] is None
    assert view["payload_bytes"] > 0
    assert view["timings"]["accepted_at"] >= view["timings"]["received_at"]
    assert view["timings"]["intake_seconds"] >= 0


async def test_unknown_batch_is_404(api: Api) -> None:
    response = await api.client.get("/batches/20250101-000000-000000000000", headers=AUTH)
    assert response.status_code == 404
    assert "20250101-000000-000000000000" in response.json()["detail"]


async def test_work_items_are_spread_evenly_over_the_priority_partitions(api: Api) -> None:
    items = rows(95)  # 10 chunks over 4 partitions: 3, 3, 2, 2 in some order
    response = await api.post_batch(csv_file(items), {**AUTH, **CSV_TYPE}, priority="high")
    batch_id = response.json()["batch_id"]
    storage, settings = api.services.storage, api.settings

    by_queue = queued_work_items(storage, settings, "high")

    assert sorted(len(found) for found in by_queue.values()) == [2, 2, 3, 3]
    work = sorted((item for found in by_queue.values() for item in found), key=lambda i: i.chunk)
    assert [item.chunk for item in work] == list(range(10))
    payloads = storage.container(settings.payload_container)
    for item in work:
        assert item.batch_id == batch_id
        assert item.priority == "high"
        assert item.first_line == 2 + 10 * item.chunk
        assert item.last_line == item.first_line + item.transactions - 1
        assert item.transactions == (10 if item.chunk < 9 else 5)
        assert item.sha256 == hashlib.sha256(payloads.get(item.payload_blob).data).hexdigest()
        assert item.pricebook_version == sample_pricebook().version_hash()
    for other in ("normal", "low"):
        assert all(not found for found in queued_work_items(storage, settings, other).values())


async def test_one_trigger_per_batch_with_its_priority(api: Api) -> None:
    high = await api.post_batch(csv_file(rows(25)), {**AUTH, **CSV_TYPE}, priority="high")
    low = await api.post_batch(csv_file(rows(5)), {**AUTH, **CSV_TYPE}, priority="low")

    triggers = api.triggers()

    assert len(triggers) == 2
    events = {TriggerEvent.from_text(t.body).batch_id: t for t in triggers}
    for response, priority in ((high, "high"), (low, "low")):
        answer = response.json()
        message = events[answer["batch_id"]]
        assert message.properties[PRIORITY_PROPERTY] == priority
        assert message.properties[KIND_PROPERTY] == "work"
        event = TriggerEvent.from_text(message.body)
        record = api.services.records.find(answer["batch_id"])
        assert record is not None
        assert event.priority == priority
        assert event.chunk_count == answer["chunks"]
        assert event.payload_size == record.record.payload_bytes
        assert event.storage_account == api.services.storage.account_name
        assert set(event.queue_names) <= set(api.settings.work_queues(priority))
        assert len(event.queue_names) == min(answer["chunks"], api.settings.partitions)


async def test_new_batches_pin_the_pricebook_current_at_acceptance(api: Api) -> None:
    first = await api.post_batch(csv_file(ITEMS), {**AUTH, **CSV_TYPE})
    document = json.loads(sample_pricebook().to_json())
    document["skus"]["SEAT-PRO"]["unit_price"] = "31.99"
    new_version = api.services.pricebooks.upload(json.dumps(document).encode())

    second = await api.post_batch(csv_file(ITEMS), {**AUTH, **CSV_TYPE})
    shown = await api.client.get("/pricebook", headers=AUTH)

    old_view = (await api.client.get(first.json()["status_url"], headers=AUTH)).json()
    new_view = (await api.client.get(second.json()["status_url"], headers=AUTH)).json()
    assert old_view["pricebook_version"] == sample_pricebook().version_hash()
    assert new_view["pricebook_version"] == new_version != old_view["pricebook_version"]
    assert shown.json()["version"] == new_version
    assert shown.json()["pricebook"]["skus"]["SEAT-PRO"]["unit_price"] == "31.99"
