"""The chunk result blob: version 4 (an SQLite image or JSON) as processors write it; the
older versions 3, 2 and 1 (per-customer subtotals) still read, their subtotals summed."""

from __future__ import annotations

import gzip
import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from shared.contracts.blob_compression import compress, decompress
from shared.contracts.chunk_result import (
    COLUMNS,
    SUBTOTAL_COLUMNS,
    ChunkResultError,
    decode_result,
    decode_result_rows,
    encode_result,
    encode_result_rows,
)
from shared.contracts.result_table import SCHEMA, SCHEMA_V3, ResultTable
from shared.domain.charges import CHARGE_FIELDS, RatedCharge, subtotals
from shared.domain.transactions import id_checksum_of

CHARGES = [
    RatedCharge("T-1", "C-1", "SKU", "EU", 3, 100, 300, 0, 300, 60, 360),
    RatedCharge("T-2", "C-2", "SKU", "EU", 1, 100, 100, 5, 95, 19, 114),
]
#: The two charges' figures summed: lines, quantity, gross, discount, net, tax, total.
SUMS = (2, 4, 400, 5, 395, 79, 474)
TIMES = [
    datetime(2024, 6, 1, 12, 0, 0, 250_000, tzinfo=UTC),
    datetime(2024, 6, 1, 0, 30, tzinfo=timezone(timedelta(hours=2))),
]


def blob() -> bytes:
    return encode_result(
        batch_id="b",
        chunk=3,
        currency="EUR",
        pricebook_version="v1",
        charges=list(zip(TIMES, CHARGES, strict=True)),
        subtotals=subtotals(CHARGES),
    )


def json_blob() -> bytes:
    """The same result as a JSON document (for PostgreSQL warehouses)."""
    rated = decode_result_rows(blob())
    return encode_result_rows(
        batch_id="b",
        chunk=3,
        currency="EUR",
        pricebook_version="v1",
        rows=list(rated.rows),
        invoice_sums=rated.invoice_sums,
        result_format="json",
    )


OLD_SUBTOTALS = {"C-1": [1, 3, 300, 0, 300, 60, 360], "C-2": [1, 1, 100, 5, 95, 19, 114]}


def version_2_blob() -> bytes:
    """The same result as an older processor's JSON document: one subtotal per customer."""
    written = document(json_blob())
    del written["invoice_sum_columns"], written["invoice_sums"]
    written.update(v=2, subtotal_columns=list(SUBTOTAL_COLUMNS), subtotals=OLD_SUBTOTALS)
    return compress(json.dumps(written).encode())


def version_3_blob() -> bytes:
    """The same result as an older processor's image: a ``subtotals`` table, no sums."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    for sql in SCHEMA_V3.values():
        db.execute(sql)
    db.execute(
        "INSERT INTO header VALUES (3, 'b', 3, 'EUR', 'v1', ?)",
        (str(id_checksum_of(["T-1", "T-2"])),),
    )
    db.executemany(
        f"INSERT INTO rows VALUES ({', '.join('?' * 12)})", decode_result_rows(blob()).rows
    )
    db.executemany(
        "INSERT INTO subtotals VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(customer, *figures) for customer, figures in OLD_SUBTOTALS.items()],
    )
    image = db.serialize()
    db.close()
    return compress(image)


def document(data: bytes) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(decompress(data))
    return decoded


def test_rows_are_the_loaders_last_columns_with_utc_text() -> None:
    rated = decode_result_rows(blob())
    assert (rated.batch_id, rated.chunk, rated.currency) == ("b", 3, "EUR")
    assert rated.rows == [
        ("2024-06-01 12:00:00.250000", "T-1", "C-1", "SKU", "EU", 3, 100, 300, 0, 300, 60, 360),
        ("2024-05-31 22:30:00.000000", "T-2", "C-2", "SKU", "EU", 1, 100, 100, 5, 95, 19, 114),
    ]
    assert rated.invoice_sums == SUMS


def test_the_result_carries_its_rows_invoice_sums_not_a_row_per_customer() -> None:
    image = sqlite3.connect(":memory:")
    image.deserialize(decompress(blob()))
    tables = {name for (name,) in image.execute("SELECT name FROM sqlite_schema")}
    image.close()
    assert tables == {"header", "rows"}
    assert decode_result_rows(json_blob()).invoice_sums == SUMS
    assert "subtotals" not in document(json_blob())


@pytest.mark.parametrize("older", [version_3_blob, version_2_blob], ids=["image v3", "json v2"])
def test_an_older_processors_subtotals_are_summed_into_the_same_figures(older: Any) -> None:
    old, new = decode_result_rows(older()), decode_result_rows(blob())
    assert list(old.rows) == list(new.rows)
    assert (old.invoice_sums, old.id_checksum) == (SUMS, new.id_checksum)


def test_the_result_carries_its_rows_partial_id_checksum() -> None:
    assert decode_result_rows(blob()).id_checksum == id_checksum_of(["T-1", "T-2"])


def test_the_processor_writes_an_sqlite_image_whose_rows_load_without_python_objects() -> None:
    rated = decode_result_rows(blob())
    assert isinstance(rated.rows, ResultTable)
    assert decompress(blob()).startswith(b"SQLite format 3\x00")
    assert len(rated.rows) == 2


def test_a_json_result_reads_as_the_same_rows() -> None:
    old, new = decode_result_rows(json_blob()), decode_result_rows(blob())
    assert document(json_blob())["v"] == 4
    assert old.rows == list(new.rows)
    assert (old.invoice_sums, old.id_checksum) == (new.invoice_sums, new.id_checksum)
    assert (old.batch_id, old.chunk, old.currency, old.pricebook_version) == (
        new.batch_id,
        new.chunk,
        new.currency,
        new.pricebook_version,
    )


def test_an_empty_result_is_an_empty_table() -> None:
    rated = decode_result_rows(
        encode_result_rows(
            batch_id="b",
            chunk=0,
            currency="EUR",
            pricebook_version="v",
            rows=[],
            invoice_sums=(0,) * 7,
        )
    )
    assert (len(rated.rows), list(rated.rows), rated.invoice_sums) == (0, [], (0,) * 7)


def test_a_version_2_result_written_before_the_checksum_reads_as_none() -> None:
    written = document(version_2_blob())
    del written["id_checksum"]
    rated = decode_result_rows(compress(json.dumps(written).encode()))
    assert rated.id_checksum is None
    assert rated.rows == decode_result_rows(blob()).rows


def test_charge_objects_round_trip_as_aware_utc_datetimes() -> None:
    rated = decode_result(blob())
    assert [row.charge for row in rated.charges] == CHARGES
    assert [row.occurred_at for row in rated.charges] == [t.astimezone(UTC) for t in TIMES]
    assert rated.invoice_sums == SUMS


def test_a_version_1_result_of_the_previous_release_is_still_applied() -> None:
    """What a processor of the previous release wrote: a line first, RFC 3339 text."""
    rows = [
        [2, "2024-06-01T12:00:00.25Z", *(getattr(CHARGES[0], f) for f in CHARGE_FIELDS)],
        [3, "2024-06-01T00:30:00+02:00", *(getattr(CHARGES[1], f) for f in CHARGE_FIELDS)],
    ]
    old = {
        "v": 1,
        "batch_id": "b",
        "chunk": 3,
        "currency": "EUR",
        "pricebook_version": "v1",
        "columns": ["line", "occurred_at", *CHARGE_FIELDS],
        "rows": rows,
        "subtotal_columns": list(SUBTOTAL_COLUMNS),
        "subtotals": OLD_SUBTOTALS,
    }
    data = gzip.compress(json.dumps(old).encode())  # the previous release wrote gzip
    assert decode_result_rows(data).rows == decode_result_rows(blob()).rows
    assert decode_result_rows(data).invoice_sums == SUMS


def test_json_rows_are_written_as_arrays_under_their_column_names() -> None:
    written = document(
        encode_result_rows(
            batch_id="b",
            chunk=0,
            currency="EUR",
            pricebook_version="v",
            rows=[],
            invoice_sums=(0,) * 7,
            result_format="json",
        )
    )
    assert written["v"] == 4
    assert written["columns"] == list(COLUMNS)
    assert written["columns"][0] == "occurred_at_utc"


def _broken(change: str) -> bytes:
    written = document(json_blob())
    if change == "version":
        written["v"] = 5
    elif change == "columns":
        written["columns"] = ["line", *written["columns"]]
    elif change == "short row":
        written["rows"][0] = written["rows"][0][:-1]
    elif change == "text amount":
        written["rows"][0][-1] = "360"
    elif change == "sums":
        written["invoice_sums"] = [1, 2]
    elif change == "checksum":
        written["id_checksum"] = 2**64
    return compress(json.dumps(written).encode())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not compressed", "not a compressed chunk result: neither"),
        (compress(b"{not json"), "not a JSON chunk result"),
        (compress(b"{}")[:-3], "not a compressed chunk result: a damaged"),
        (_broken("version"), "malformed chunk result"),
        (_broken("columns"), "unexpected result columns"),
        (_broken("short row"), r"malformed chunk result.*\$\.rows\[0\]"),
        (_broken("text amount"), r"malformed chunk result.*\$\.rows\[0\]"),
        (_broken("sums"), r"malformed chunk result.*\$\.invoice_sums"),
        (_broken("checksum"), r"malformed chunk result.*\$\.id_checksum"),
    ],
    ids=[
        "not compressed",
        "not json",
        "truncated",
        "future version",
        "other columns",
        "short row",
        "text",
        "sums",
        "checksum beyond 64 bits",
    ],
)
def test_anything_else_is_a_clear_error_that_says_where(data: bytes, message: str) -> None:
    with pytest.raises(ChunkResultError, match=message):
        decode_result_rows(data)


def _broken_image(change: str) -> bytes:
    """The image of :func:`blob`, altered through SQLite itself."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.deserialize(decompress(blob()))
    if change == "version":
        db.execute("UPDATE header SET v = 3")
    elif change == "two headers":
        db.execute("INSERT INTO header SELECT * FROM header")
    elif change == "extra table":
        db.execute("CREATE TABLE more (x INTEGER)")
    elif change == "trigger":
        db.execute("CREATE TRIGGER t AFTER INSERT ON header BEGIN SELECT 1; END")
    elif change == "other columns":
        db.execute("ALTER TABLE rows ADD COLUMN line INTEGER")
    elif change == "gap in rows":
        db.execute("UPDATE rows SET rowid = 7 WHERE rowid = 2")
    elif change == "checksum":
        db.execute(f"UPDATE header SET id_checksum = '{2**64}'")
    elif change == "checksum text":
        db.execute("UPDATE header SET id_checksum = '-1'")
    image = db.serialize()
    db.close()
    if change == "truncated":
        image = image[: len(image) // 2]
    return compress(image)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("version", "malformed chunk result header"),
        ("two headers", "malformed chunk result header"),
        ("extra table", "unexpected chunk result tables"),
        ("trigger", "no index, view or trigger"),
        ("other columns", "unexpected chunk result tables"),
        ("gap in rows", r"rows numbered 1…7, not 1…2"),
        ("checksum", r"id checksum must be below 2\*\*64 - in its header"),
        ("checksum text", "malformed chunk result id checksum '-1'"),
        ("truncated", "not a chunk result database"),
    ],
)
def test_an_image_that_is_not_exactly_the_schema_is_a_clear_error(
    change: str, message: str
) -> None:
    with pytest.raises(ChunkResultError, match=message):
        decode_result_rows(_broken_image(change))


def test_the_schema_is_strict_so_the_writer_cannot_store_a_wrong_type() -> None:
    assert all(sql.endswith("STRICT") for sql in SCHEMA.values())
    with pytest.raises(sqlite3.IntegrityError):
        encode_result_rows(
            batch_id="b",
            chunk=0,
            currency="EUR",
            pricebook_version="v",
            rows=[("2024-06-01 12:00:00.000000", "T", "C", "S", "EU", "3", 1, 1, 0, 1, 0, "x")],
            invoice_sums=(1, 3, 1, 0, 1, 0, 1),
        )
