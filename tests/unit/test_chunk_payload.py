"""The claim-check payload codec: what the initiator writes, a processor reads back."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from itertools import pairwise

import pytest

from shared.contracts.blob_compression import compress, decompress
from shared.contracts.chunk_payload import (
    ChunkPayloadError,
    chunk_json,
    chunk_json_of_parts,
    compress_chunk_json,
    decode_chunk,
    decode_chunk_rows,
    encode_chunk,
    payload_blob_name,
    rows_json,
)
from shared.domain.transactions import Transaction

ROWS = [
    (
        2,
        Transaction(
            "tx-1",
            "cust-1",
            "SEAT-PRO",
            3,
            "EU",
            datetime.fromisoformat("2025-03-01T10:00:00+02:00"),
        ),
    ),
    (
        3,
        Transaction(
            "tx-2",
            "cust-2",
            "API-CALLS",
            1_000_000,
            "US",
            datetime.fromisoformat("2025-03-01T23:59:59.123456-05:30"),
        ),
    ),
]


def test_round_trip_keeps_lines_values_and_offsets() -> None:
    payload = decode_chunk(encode_chunk("batch-1", 7, ROWS))
    assert (payload.batch_id, payload.chunk) == ("batch-1", 7)
    assert payload.rows == ROWS
    assert [tx.occurred_at.isoformat() for _, tx in payload.rows] == [
        "2025-03-01T10:00:00+02:00",
        "2025-03-01T23:59:59.123456-05:30",
    ]


def blob_timestamps(data: bytes) -> list[str]:
    document = json.loads(decompress(data))
    return [row[document["columns"].index("occurred_at")] for row in document["rows"]]


def test_a_timestamp_known_as_text_is_written_as_that_text_and_read_back_the_same() -> None:
    texts = ["2025-03-01T08:00:00Z", "2025-03-01T23:59:59.123456789-05:30"]
    rows = []
    for line, text in enumerate(texts, start=2):
        parsed = Transaction("tx", "cust", "SKU", 1, "EU", datetime.fromisoformat(text))
        parsed.occurred_at_text = text  # as the batch parser leaves it
        rows.append((line, parsed))

    data = encode_chunk("b", 0, rows)

    assert blob_timestamps(data) == texts
    decoded = decode_chunk(data).rows
    assert decoded == rows
    assert [tx.occurred_at.utcoffset() for _, tx in decoded] == [
        tx.occurred_at.utcoffset() for _, tx in rows
    ]


def test_a_timestamp_without_text_is_written_in_iso_format() -> None:
    assert blob_timestamps(encode_chunk("b", 0, ROWS)) == [
        "2025-03-01T10:00:00+02:00",
        "2025-03-01T23:59:59.123456-05:30",
    ]


def test_encoding_is_deterministic_and_compressed() -> None:
    many = ROWS * 500
    first, second = encode_chunk("b", 0, many), encode_chunk("b", 0, many)
    assert first == second
    assert len(first) < len(decompress(first)) / 4


def test_the_blob_is_the_json_document_compressed_in_two_steps() -> None:
    document = chunk_json("batch-1", 7, ROWS)
    assert json.loads(document)["rows"][0][:2] == [2, "tx-1"]
    blob = encode_chunk("batch-1", 7, ROWS)
    assert blob.startswith(b"\x28\xb5\x2f\xfd")  # a Zstandard frame
    assert decompress(blob) == document
    assert compress_chunk_json(document) == encode_chunk("batch-1", 7, ROWS)


def test_a_document_put_together_from_parts_is_the_document_of_all_its_rows() -> None:
    many = [(line, transaction) for line, (_, transaction) in enumerate(ROWS * 4, start=2)]
    whole = chunk_json("batch-1", 3, many)
    for cuts in ([], [1], [len(many) - 1], [2, 5], [1, 2, 3, 4, 5, 6, 7]):
        bounds = [0, *cuts, len(many)]
        parts = [rows_json(many[start:end]) for start, end in pairwise(bounds)]
        assert chunk_json_of_parts("batch-1", 3, parts) == whole, cuts
    with pytest.raises(ValueError, match="at least one part"):
        chunk_json_of_parts("batch-1", 3, [])


def test_blob_names_sort_in_chunk_order() -> None:
    names = [payload_blob_name("b", chunk) for chunk in (10, 2, 100_000, 0)]
    assert sorted(names) == ["b/000000", "b/000002", "b/000010", "b/100000"]


@pytest.mark.parametrize(
    "data",
    [
        b"not compressed",
        gzip.compress(b"not json"),
        gzip.compress(json.dumps({"v": 2, "rows": []}).encode()),
        gzip.compress(json.dumps({"v": 1, "columns": ["line"], "rows": []}).encode()),
        gzip.compress(json.dumps([1, 2]).encode()),
    ],
    ids=["not compressed", "not json", "future version", "other columns", "not an object"],
)
def test_anything_else_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(ChunkPayloadError):
        decode_chunk(data)


def test_a_gzip_payload_of_the_previous_release_is_still_read() -> None:
    document = chunk_json("batch-1", 7, ROWS)
    assert (
        decode_chunk(gzip.compress(document)).rows
        == decode_chunk(encode_chunk("batch-1", 7, ROWS)).rows
    )


@pytest.mark.parametrize(
    ("change", "where"),
    [("quantity", r"\$\.rows\[0\]\[4\]"), ("width", r"\$\.rows\[0\]")],
)
def test_a_row_of_the_wrong_type_or_width_is_refused_saying_where(change: str, where: str) -> None:
    document = json.loads(chunk_json("b", 0, ROWS))
    if change == "quantity":
        document["rows"][0][4] = "3"
    else:
        document["rows"][0] = document["rows"][0][:-1]
    with pytest.raises(ChunkPayloadError, match=f"malformed chunk payload.*{where}"):
        decode_chunk_rows(compress(json.dumps(document).encode()))
