"""The batch parser's outer layers: media types, gzip, size limits, UTF-8 and NUL bytes."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest

from initiator.intake import parse_batch
from initiator.intake.blank_lines import MAX_BLANK_LINES
from tests.unit.batch_files import (
    PRICEBOOK,
    accepted,
    csv_body,
    jsonl_body,
    only_problem,
    pieces,
    record,
    rejected,
    row,
    transaction,
)

BODY = csv_body(row("T1"), row("T2"))
EXPECTED = [(2, transaction("T1")), (3, transaction("T2"))]

# --- gzip -------------------------------------------------------------------------------


def test_gzip_declared_by_content_encoding() -> None:
    assert accepted(gzip.compress(BODY), content_encoding="gzip") == EXPECTED


@pytest.mark.parametrize("content_type", ["text/csv", None, "application/gzip"])
def test_gzip_recognised_by_its_magic_bytes(content_type: str | None) -> None:
    assert accepted(gzip.compress(BODY), content_type=content_type) == EXPECTED


def test_gzip_in_tiny_pieces_and_json_lines_inside() -> None:
    body = gzip.compress(jsonl_body(record(transaction_id="T1"), record(transaction_id="T2")))
    assert accepted(pieces(body, 1), content_type=None, content_encoding="GZIP") == [
        (1, transaction("T1")),
        (2, transaction("T2")),
    ]


def test_concatenated_gzip_members_are_one_file() -> None:
    head, tail = BODY[:70], BODY[70:]
    assert accepted(gzip.compress(head) + gzip.compress(tail)) == EXPECTED


def test_concatenated_large_gzip_members_are_one_file() -> None:
    rows = [row(f"T{i}") for i in range(20_000)]  # each half inflates to > one inflate step
    body = gzip.compress(csv_body(*rows[:10_000])) + gzip.compress(
        "".join(f"{line}\n" for line in rows[10_000:]).encode()
    )
    transactions = accepted(pieces(body, 10_000), content_encoding="gzip")
    assert [line for line, _ in transactions] == list(range(2, 20_002))
    assert transactions[-1] == (20_001, transaction("T19999"))


def test_truncated_gzip() -> None:
    rejection = rejected(gzip.compress(BODY)[:-6], content_encoding="gzip")
    assert rejection.status_code == 400
    line, _, reason = only_problem(rejection)
    assert line is None
    assert reason.startswith("the gzip stream is truncated")


def test_garbage_declared_as_gzip() -> None:
    rejection = rejected(BODY, content_encoding="gzip")
    assert rejection.status_code == 400
    assert only_problem(rejection)[2].startswith("the body is not valid gzip data")


def test_corrupt_gzip_data_after_the_magic() -> None:
    corrupt = bytearray(gzip.compress(BODY * 50))
    corrupt[20:40] = b"\xff" * 20
    rejection = rejected(bytes(corrupt))
    assert rejection.status_code == 400
    assert any("gzip" in problem.reason for problem in rejection.problems)


def test_garbage_after_a_gzip_member() -> None:
    rejection = rejected(gzip.compress(BODY) + b"trailing junk")
    assert rejection.status_code == 400
    assert only_problem(rejection)[2].startswith(
        "the data after gzip member 1 is not a valid gzip member"
    )


def test_a_gzip_bomb_stops_at_the_decompressed_limit_without_reading_on() -> None:
    # Not blank lines: those stop at the blank-line cap, long before any size limit.
    member = gzip.compress(b"x" * 1_000_000, compresslevel=9)
    compressed = member * 200  # concatenated members: ~200 KB that inflate to 200 MB
    assert len(compressed) < 250_000
    consumed = 0

    def chunks() -> Iterator[bytes]:
        nonlocal consumed
        for chunk in pieces(compressed, 4096):
            consumed += len(chunk)
            yield chunk

    rejection = rejected(chunks(), max_decompressed_bytes=1_000_000)
    assert rejection.status_code == 413
    assert only_problem(rejection) == (
        None,
        None,
        "the decompressed batch is larger than the limit of 1,000,000 bytes",
    )
    assert consumed < len(compressed) // 10


def test_the_body_size_limit() -> None:
    body = csv_body(*(row(f"T{i}") for i in range(200)))
    rejection = rejected(pieces(body, 1000), max_body_bytes=5_000)
    assert rejection.status_code == 413
    assert only_problem(rejection)[2] == "the request body is larger than the limit of 5,000 bytes"


# --- media types ---------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["application/json", "image/png", "text/html"])
def test_unsupported_content_type_is_415_before_reading(content_type: str) -> None:
    reader = parse_batch(
        [BODY], content_type=content_type, content_encoding=None, pricebook=PRICEBOOK
    )
    rejection = reader.rejection()
    assert rejection is not None
    assert rejection.status_code == 415
    line, field, reason = only_problem(rejection)
    assert (line, field) == (None, "Content-Type")
    assert reason.startswith(f"unsupported content type {content_type!r}")
    assert list(reader) == []


def test_unsupported_charset_is_415() -> None:
    rejection = rejected(BODY, content_type="text/csv; charset=iso-8859-1")
    assert rejection.status_code == 415
    assert "must be UTF-8" in only_problem(rejection)[2]


@pytest.mark.parametrize("encoding", ["br", "deflate", "gzip, br"])
def test_unsupported_content_encoding_is_415(encoding: str) -> None:
    rejection = rejected(BODY, content_encoding=encoding)
    assert rejection.status_code == 415
    assert only_problem(rejection)[:2] == (None, "Content-Encoding")


def test_identity_encoding_is_no_encoding() -> None:
    assert accepted(BODY, content_encoding="identity") == EXPECTED


# --- bytes that are not UTF-8 text -----------------------------------------------------------


def test_invalid_utf8_names_its_line_and_column() -> None:
    body = csv_body(row("T1"), row("T2")) + "T3,C\u00e9,SKU-1".encode("latin-1") + b",5,EU,x\n"
    rejection = rejected(body)
    assert rejection.status_code == 400
    assert only_problem(rejection) == (
        4,
        None,
        "the line is not valid UTF-8: byte 0xe9 at column 5 (invalid continuation byte)",
    )


def test_nul_byte_names_its_line_and_column() -> None:
    body = csv_body(row("T1"), row("T\x002"), row("T3"))
    rejection = rejected(body)
    assert rejection.status_code == 400
    assert only_problem(rejection) == (3, None, "the line contains a NUL byte at column 2")


def test_every_bad_line_is_reported_and_the_rest_still_checked() -> None:
    body = csv_body(row("T1")) + b"\xff\n" + csv_body(row("T3", region="XX"), header="\x00")
    rejection = rejected(body)
    assert [(p.line, p.field) for p in rejection.problems] == [(3, None), (4, None), (5, "region")]
    assert rejection.status_code == 400  # malformed lines outrank invalid values


def test_invalid_utf8_in_the_header_stops_the_scan() -> None:
    body = b"transaction_id,customer\xff_id,sku,quantity,region,occurred_at\n" + row().encode()
    rejection = rejected(body)
    assert only_problem(rejection)[:2] == (1, None)


def test_multibyte_characters_split_across_chunks_are_fine() -> None:
    header = "transaction_id,customer_id,sku,quantity,region,occurred_at,note"
    body = csv_body(row("T1") + ",caf\u00e9 \u2603 \U0001f600", header=header)
    assert accepted(pieces(body, 1)) == [(2, transaction("T1"))]


def test_a_bom_split_across_chunks_is_still_stripped() -> None:
    body = b"\xef\xbb\xbf" + BODY
    assert accepted([body[:1], body[1:2], body[2:4], body[4:]]) == EXPECTED


def test_a_bom_only_once_at_the_start() -> None:
    body = csv_body(row("T1"), "\ufeff" + row("T2"))
    line, field, _ = only_problem(rejected(body))
    assert (line, field) == (3, "transaction_id")


def test_a_long_blank_prefix_is_read_as_csv_with_exact_line_numbers() -> None:
    body = b"\n" * 70_000 + csv_body(row("T1"))
    assert accepted(pieces(body, 8192), content_type=None) == [(70_002, transaction("T1"))]


def test_a_gzip_bomb_of_blank_lines_stops_at_the_blank_line_cap() -> None:
    """A header and 50 MB of newlines in 50 KB: skipped lines count, so it stops early."""
    member = gzip.compress(b"\n" * 1_000_000, compresslevel=9)
    compressed = gzip.compress(BODY.splitlines(keepends=True)[0]) + member * 50
    consumed = 0

    def chunks() -> Iterator[bytes]:
        nonlocal consumed
        for chunk in pieces(compressed, 4096):
            consumed += len(chunk)
            yield chunk

    rejection = rejected(chunks())
    assert rejection.status_code == 400
    assert only_problem(rejection) == (
        MAX_BLANK_LINES + 2,
        None,
        f"more than {MAX_BLANK_LINES:,} blank lines: a batch file holds transactions, not padding",
    )
    assert consumed < len(compressed) // 5
