"""The batch parser on CSV files: what is accepted exactly, and what is rejected where and why."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from initiator.intake import parse_batch
from tests.unit.batch_files import (
    HEADER,
    PRICEBOOK,
    accepted,
    csv_body,
    only_problem,
    parse,
    pieces,
    rejected,
    row,
    transaction,
)

# --- what must be accepted -------------------------------------------------------------


def test_plain_csv_gives_the_exact_transactions_with_their_lines() -> None:
    body = csv_body(
        row("T1", "C1", "SKU-1", "5", "EU", "2026-01-05T10:00:00Z"),
        row("T2", "C-2.x:y_z", "API-CALLS", "1000000", "US", "2026-12-31T23:59:59-08:00"),
    )
    assert accepted(body) == [
        (2, transaction("T1", "C1", "SKU-1", 5, "EU", "2026-01-05T10:00:00+00:00")),
        (
            3,
            transaction(
                "T2", "C-2.x:y_z", "API-CALLS", 1_000_000, "US", "2026-12-31T23:59:59-08:00"
            ),
        ),
    ]


def test_crlf_line_endings_are_accepted() -> None:
    body = csv_body(row("T1"), row("T2"), newline="\r\n")
    assert accepted(body) == [(2, transaction("T1")), (3, transaction("T2"))]


def test_a_utf8_bom_is_stripped_from_the_header() -> None:
    body = b"\xef\xbb\xbf" + csv_body(row("T1"))
    assert accepted(body) == [(2, transaction("T1"))]


def test_extra_and_reordered_columns() -> None:
    header = "note,occurred_at,region,quantity,sku,customer_id,transaction_id,extra"
    body = csv_body("hello,2026-01-05T10:00:00Z,US,7,API-CALLS,C9,T1,x", header=header)
    assert accepted(body) == [(2, transaction("T1", "C9", "API-CALLS", 7, "US"))]


def test_quoted_fields_including_escaped_quotes_and_commas() -> None:
    header = HEADER + ",note"
    body = csv_body(
        '"T1","C1","SKU-1","5","EU","2026-01-05T10:00:00Z","say ""hi"", ok"', header=header
    )
    assert accepted(body) == [(2, transaction("T1"))]


def test_no_final_newline() -> None:
    body = csv_body(row("T1")) + row("T2").encode()
    assert accepted(body) == [(2, transaction("T1")), (3, transaction("T2"))]


def test_fractional_seconds_with_a_non_utc_offset() -> None:
    body = csv_body(row("T1", occurred_at="2026-03-01T08:15:30.123456789+05:30"))
    [(_, parsed)] = accepted(body)
    expected = datetime(
        2026, 3, 1, 8, 15, 30, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30))
    )
    assert parsed.occurred_at == expected
    assert parsed.occurred_at.utcoffset() == timedelta(hours=5, minutes=30)


@pytest.mark.parametrize(
    "text",
    ["2026-01-05T10:00:00Z", "2026-03-01T08:15:30.123456789+05:30", "2026-06-30T12:00:00.5-03:30"],
)
def test_the_timestamp_keeps_its_text_as_written_for_the_payload(text: str) -> None:
    [(_, parsed)] = accepted(csv_body(row("T1", occurred_at=text)))
    assert parsed.occurred_at_text == text
    assert parsed.occurred_at == datetime.fromisoformat(text)


def test_a_quoted_field_spanning_lines_keeps_physical_line_numbers() -> None:
    header = HEADER + ",note"
    body = csv_body(
        row("T1") + ',"first\nsecond\nthird"',  # lines 2-4
        row("T2") + ",plain",  # line 5
        row("T3", quantity="0") + ",x",  # line 6
        header=header,
    )
    line, field, _ = only_problem(rejected(body))
    assert (line, field) == (6, "quantity")
    good = csv_body(row("T1") + ',"a\r\nb"', row("T2") + ",c", header=header, newline="\r\n")
    assert accepted(good) == [(2, transaction("T1")), (4, transaction("T2"))]


def test_blank_lines_are_skipped_but_counted() -> None:
    body = csv_body("", row("T1"), "", row("T2"), "")
    assert accepted(body) == [(3, transaction("T1")), (5, transaction("T2"))]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_any_chunking_of_the_body_gives_the_same_transactions(size: int) -> None:
    body = b"\xef\xbb\xbf" + csv_body(row("T1"), row("T2", quantity="12"), newline="\r\n")
    expected = [(2, transaction("T1")), (3, transaction("T2", quantity=12))]
    assert accepted(pieces(body, size)) == expected


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "",
        "text/csv",
        "text/csv; charset=utf-8",
        "TEXT/CSV",
        "text/plain",
        "application/octet-stream",
    ],
)
def test_csv_is_read_under_its_own_and_generic_content_types(content_type: str | None) -> None:
    assert accepted(csv_body(row("T1")), content_type=content_type) == [(2, transaction("T1"))]


def test_quantity_with_leading_zeros_is_a_number() -> None:
    assert accepted(csv_body(row(quantity="0007"))) == [(2, transaction(quantity=7))]


# --- the whole body or the header is wrong (400) -----------------------------------------


@pytest.mark.parametrize("body", [b"", b"\xef\xbb\xbf", b"\n\n  \r\n"])
def test_empty_batch(body: bytes) -> None:
    rejection = rejected(body)
    assert rejection.status_code == 400
    assert only_problem(rejection) == (None, None, "empty batch: the body holds no data")


@pytest.mark.parametrize("body", [csv_body(), csv_body("", ""), HEADER.encode()])
def test_header_only_means_no_transactions(body: bytes) -> None:
    rejection = rejected(body)
    assert rejection.status_code == 400
    line, _, reason = only_problem(rejection)
    assert line is None
    assert reason.startswith("no transactions")


def test_missing_column() -> None:
    header = "transaction_id,customer_id,sku,quantity,occurred_at"
    rejection = rejected(csv_body("T1,C1,SKU-1,5,2026-01-05T10:00:00Z", header=header))
    assert rejection.status_code == 400
    assert only_problem(rejection) == (1, "region", "missing column 'region' in the header")


@pytest.mark.parametrize(
    ("written", "meant"),
    [("transactionid", "transaction_id"), ("Quantity", "quantity"), ("ocurred_at", "occurred_at")],
)
def test_misspelled_column_suggests_the_closest_name(written: str, meant: str) -> None:
    header = HEADER.replace(meant, written)
    rejection = rejected(csv_body(row(), header=header))
    assert rejection.status_code == 400
    line, field, reason = only_problem(rejection)
    assert (line, field) == (1, meant)
    assert f"the header has {written!r}: did you mean {meant!r}?" in reason


def test_duplicated_column() -> None:
    rejection = rejected(csv_body(row() + ",EU", header=HEADER + ",region"))
    assert rejection.status_code == 400
    assert only_problem(rejection) == (
        1,
        "region",
        "column 'region' appears 2 times in the header (columns 5, 7)",
    )


def test_a_header_row_that_is_data_is_reported_once() -> None:
    rejection = rejected(b"T1,C1,SKU-1,5,EU,2026-01-05T10:00:00Z\n")
    line, field, reason = only_problem(rejection)
    assert (line, field) == (1, None)
    assert reason.startswith("the first line has none of the required columns")


def test_header_after_leading_blank_lines_is_reported_on_its_physical_line() -> None:
    rejection = rejected(b"\n\n" + csv_body(row(), header=HEADER.replace("sku", "skus")))
    assert only_problem(rejection)[:2] == (3, "sku")


def test_unbalanced_quote_in_the_middle_is_reported_where_it_opens() -> None:
    body = csv_body(row("T1"), 'T2,"C1,SKU-1,5,EU,2026-01-05T10:00:00Z', row("T3"), row("T4"))
    rejection = rejected(body)
    assert rejection.status_code == 400
    line, _, reason = only_problem(rejection)
    assert line == 3
    assert reason.startswith("unbalanced quote: the quoted field opened on line 3")


def test_an_unclosed_quote_stops_at_the_field_size_limit_not_at_the_end_of_memory() -> None:
    rows = [row(f"T{i}") for i in range(20_000)]  # far more than csv's 128 KiB field limit
    rows[10] = rows[10].replace(",C1,", ',"C1,')
    consumed = []

    def body() -> Iterator[bytes]:
        for chunk in pieces(csv_body(*rows), 4096):
            consumed.append(len(chunk))
            yield chunk

    rejection = rejected(body())
    line, _, reason = only_problem(rejection)
    assert line == 12
    assert "unbalanced quote" in reason
    assert sum(consumed) < 300_000  # stopped soon after the limit, did not read on


def test_stray_text_after_a_closing_quote() -> None:
    line, _, reason = only_problem(rejected(csv_body(row("T1", customer_id='"C1"x'))))
    assert line == 2
    assert reason.startswith("malformed CSV")


def test_a_bare_carriage_return_inside_a_line() -> None:
    line, _, reason = only_problem(rejected(csv_body(row("T1", customer_id="C\rX"))))
    assert line == 2
    assert "carriage return" in reason


# --- lines that break a field rule (422) --------------------------------------------------


def test_too_few_fields() -> None:
    rejection = rejected(csv_body(row("T1"), "T2,C1,SKU-1,5,EU"))
    assert rejection.status_code == 422
    assert only_problem(rejection) == (3, None, "the line has 5 fields but the header has 6")


def test_too_many_fields() -> None:
    rejection = rejected(csv_body(row("T1") + ",surplus"))
    assert rejection.status_code == 422
    assert only_problem(rejection) == (2, None, "the line has 7 fields but the header has 6")


@pytest.mark.parametrize(
    ("quantity", "reason"),
    [
        ("0", "quantity 0 is out of range (1 to 1,000,000)"),
        ("-1", "quantity '-1' is not a whole number written in plain digits (1 to 1,000,000)"),
        ("1000001", "quantity 1000001 is out of range (1 to 1,000,000)"),
        ("99999999999999999999", "quantity 99999999999999999999 is out of range (1 to 1,000,000)"),
        ("1.0", "quantity '1.0' is not a whole number written in plain digits (1 to 1,000,000)"),
        ("1e3", "quantity '1e3' is not a whole number written in plain digits (1 to 1,000,000)"),
        ("abc", "quantity 'abc' is not a whole number written in plain digits (1 to 1,000,000)"),
        ("+5", "quantity '+5' is not a whole number written in plain digits (1 to 1,000,000)"),
        (" 5", "quantity ' 5' is not a whole number written in plain digits (1 to 1,000,000)"),
        ("5 ", "quantity '5 ' is not a whole number written in plain digits (1 to 1,000,000)"),
        (
            "\u0665",
            "quantity '\u0665' is not a whole number written in plain digits (1 to 1,000,000)",
        ),
        ("", "quantity is empty"),
    ],
)
def test_bad_quantity(quantity: str, reason: str) -> None:
    rejection = rejected(csv_body(row("T1"), row("T2"), row("T3", quantity=quantity)))
    assert rejection.status_code == 422
    assert only_problem(rejection) == (4, "quantity", reason)


@pytest.mark.parametrize(
    ("transaction_id", "reason"),
    [
        ("", "transaction_id is empty"),
        ("T" * 65, "transaction_id is 65 characters long (at most 64)"),
        ("T#1", "transaction_id 'T#1' contains '#' at position 2"),
        ("T 1", "transaction_id 'T 1' contains ' ' at position 2"),
        ("Tö", "transaction_id 'Tö' contains 'ö' at position 2"),
    ],
)
def test_bad_transaction_id(transaction_id: str, reason: str) -> None:
    rejection = rejected(csv_body(row("T1"), row(transaction_id)))
    assert rejection.status_code == 422
    line, field, found = only_problem(rejection)
    assert (line, field) == (3, "transaction_id")
    assert found.startswith(reason)


def test_longest_allowed_ids_are_accepted() -> None:
    longest = "a" * 64
    assert accepted(csv_body(row(longest, longest))) == [(2, transaction(longest, longest))]


def test_customer_ids_are_checked_past_the_cache_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("initiator.intake.fields._CustomerCache.limit", 2)
    rows = [row(f"T{i}", customer_id=f"C{i}") for i in range(5)] + [row("T9", customer_id="C#9")]
    transactions, rejection = parse(csv_body(*rows))
    assert [t.customer_id for _, t in transactions] == ["C0", "C1", "C2", "C3", "C4"]
    assert rejection is not None
    assert only_problem(rejection)[:2] == (7, "customer_id")


def test_transactions_of_one_customer_share_its_id_string() -> None:
    transactions = accepted(csv_body(row("T1", customer_id="ACME"), row("T2", customer_id="ACME")))
    (_, first), (_, second) = transactions
    assert first.customer_id is second.customer_id  # one str per customer in memory


def test_duplicate_transaction_id_names_both_lines() -> None:
    rejection = rejected(csv_body(row("T1"), row("T2"), row("T3"), row("T2")))
    assert rejection.status_code == 422
    assert only_problem(rejection) == (
        5,
        "transaction_id",
        "duplicate transaction_id 'T2': first seen on line 3",
    )


def test_empty_customer() -> None:
    assert only_problem(rejected(csv_body(row(customer_id="")))) == (
        2,
        "customer_id",
        "customer_id is empty",
    )


@pytest.mark.parametrize(
    ("field", "value"), [("sku", "SKU-9"), ("sku", "sku-1"), ("region", "eu"), ("region", "")]
)
def test_unknown_codes_are_case_sensitive(field: str, value: str) -> None:
    line, found_field, reason = only_problem(rejected(csv_body(row(**{field: value}))))
    assert (line, found_field) == (2, field)
    assert reason == f"unknown {field} {value!r}: not in the pricebook (codes are case-sensitive)"


@pytest.mark.parametrize(
    ("occurred_at", "reason"),
    [
        ("2026-01-05T10:00:00", "has no UTC offset"),
        ("2026-01-05T10:00:00.5", "has no UTC offset"),
        ("2026-02-30T10:00:00Z", "is not a real date-time: day is out of range for month"),
        ("2026-01-05T24:00:00+01:00", "is not a real date-time: hour must be in 0..23"),
        ("2026-01-05 10:00:00Z", "is not an ISO 8601 date-time with a UTC offset"),
        ("2026-01-05T10:00Z", "is not an ISO 8601 date-time with a UTC offset"),
        ("2026-01-05T10:00:00+0100", "is not an ISO 8601 date-time with a UTC offset"),
        ("20260105T100000Z", "is not an ISO 8601 date-time with a UTC offset"),
        ("2026-01-05", "is not an ISO 8601 date-time with a UTC offset"),
        ("yesterday", "is not an ISO 8601 date-time with a UTC offset"),
    ],
)
def test_bad_timestamp(occurred_at: str, reason: str) -> None:
    rejection = rejected(csv_body(row(occurred_at=occurred_at)))
    assert rejection.status_code == 422
    line, field, found = only_problem(rejection)
    assert (line, field) == (2, "occurred_at")
    assert found.startswith(f"occurred_at {occurred_at!r} {reason}")


def test_every_bad_field_of_a_line_is_reported_in_field_order() -> None:
    rejection = rejected(csv_body(row("T1"), row("T1", "", "X", "0", "eu", "2026-01-05")))
    assert [(p.line, p.field) for p in rejection.problems] == [
        (3, "transaction_id"),
        (3, "customer_id"),
        (3, "sku"),
        (3, "quantity"),
        (3, "region"),
        (3, "occurred_at"),
    ]


# --- limits and the reader's contract ------------------------------------------------------


def test_at_most_max_problems_are_kept_the_first_ones_in_line_order() -> None:
    body = csv_body(*(row(f"T{i}", quantity="0") for i in range(150)))
    rejection = rejected(body)
    assert [p.line for p in rejection.problems] == list(range(2, 102))
    assert rejection.problems_truncated
    small = rejected(body, max_problems=3)
    assert [p.line for p in small.problems] == [2, 3, 4]


def test_the_status_code_follows_the_problems_listed() -> None:
    bad_values = [row(f"T{i}", quantity="0") for i in range(150)]
    body = csv_body(*bad_values) + b"T\xff,C1,SKU-1,5,EU,2026-01-05T10:00:00Z\n"  # line 152
    rejection = rejected(body)
    assert rejection.problems[-1].line == 101
    assert rejection.status_code == 422  # the malformed line 152 is beyond the list
    assert rejected(body, max_problems=200).status_code == 400


def test_problems_found_ahead_do_not_push_out_earlier_ones() -> None:
    # Line 3's bad byte is seen when its block is decoded, before line 2 is parsed.
    body = csv_body(row("T1", quantity="0")) + b"T2,C\xff,SKU-1,5,EU,2026-01-05T10:00:00Z\n"
    rejection = rejected(body, max_problems=1)
    assert only_problem(rejection)[:2] == (2, "quantity")


def test_no_transaction_is_handed_out_after_the_first_problem() -> None:
    transactions, rejection = parse(csv_body(row("T1"), row("T2", sku="nope"), row("T3")))
    assert transactions == [(2, transaction("T1"))]
    assert rejection is not None
    assert only_problem(rejection)[:2] == (3, "sku")


def test_a_bad_line_deep_inside_a_200000_line_file() -> None:
    lines = [
        f"TX{i:07d},C{i % 977},SKU-1,{i % 90 + 1},EU,2026-01-05T10:00:00Z" for i in range(200_000)
    ]
    lines[123_455] = lines[123_455].replace(",EU,", ",XX,")  # physical line 123,457
    transactions, rejection = parse(pieces(csv_body(*lines), 65_536))
    assert rejection is not None
    assert only_problem(rejection) == (
        123_457,
        "region",
        "unknown region 'XX': not in the pricebook (codes are case-sensitive)",
    )
    assert len(transactions) == 123_455


def test_a_duplicate_deep_inside_a_large_file_once_ids_spilled_to_disk(tmp_path: Path) -> None:
    lines = [row(f"TX{i:06d}") for i in range(30_000)]
    lines[29_000] = row("TX000007")  # physical line 29,002 repeats line 9
    rejection = rejected(csv_body(*lines), duplicates_in_memory=1_000, temp_dir=tmp_path)
    assert only_problem(rejection) == (
        29_002,
        "transaction_id",
        "duplicate transaction_id 'TX000007': first seen on line 9",
    )


def test_late_found_duplicates_take_their_place_in_line_order(tmp_path: Path) -> None:
    lines = [row(f"TX{i:05d}") for i in range(3_000)]
    lines[1_998] = row("TX00003")  # physical line 2,000 repeats line 5
    for index in range(2_498, 2_700):  # physical lines 2,500-2,701: 202 bad quantities
        lines[index] = row(f"TX{index:05d}", quantity="0")
    rejection = rejected(csv_body(*lines), duplicates_in_memory=1_000, temp_dir=tmp_path)
    assert [p.line for p in rejection.problems] == [2_000, *range(2_500, 2_599)]
    assert (
        rejection.problems[0].reason == "duplicate transaction_id 'TX00003': first seen on line 5"
    )
    assert rejection.problems_truncated


def test_the_body_is_read_lazily_not_all_at_once() -> None:
    consumed = 0
    body = csv_body(*(row(f"T{i}") for i in range(50_000)))

    def chunks() -> Iterator[bytes]:
        nonlocal consumed
        for chunk in pieces(body, 1024):
            consumed += 1
            yield chunk

    reader = parse_batch(
        chunks(), content_type="text/csv", content_encoding=None, pricebook=PRICEBOOK
    )
    line, first = next(iter(reader))
    assert (line, first) == (2, transaction("T0"))
    assert consumed <= 2
    reader.close()


def test_rejection_before_the_end_is_refused_unless_a_problem_is_known() -> None:
    reader = parse_batch(
        [csv_body(row("T1"))], content_type="text/csv", content_encoding=None, pricebook=PRICEBOOK
    )
    with pytest.raises(RuntimeError, match="not been read to the end"):
        reader.rejection()
    assert list(reader) == [(2, transaction("T1"))]
    assert reader.rejection() is None
    with pytest.raises(RuntimeError, match="only once"):
        list(reader)


def test_after_the_first_problem_the_reader_only_collects_problems() -> None:
    reader = parse_batch(
        [csv_body(row("T1"), row("T2", region="XX"), row("T3"), row("T4", region="YY"))],
        content_type="text/csv",
        content_encoding=None,
        pricebook=PRICEBOOK,
    )
    assert [line for line, _ in reader] == [2]
    rejection = reader.rejection()
    assert rejection is not None
    assert [p.line for p in rejection.problems] == [3, 5]


def test_a_consumer_that_stops_early_gets_no_verdict_without_a_problem() -> None:
    reader = parse_batch(
        [csv_body(row("T1"), row("T2"))],
        content_type="text/csv",
        content_encoding=None,
        pricebook=PRICEBOOK,
    )
    for _ in reader:
        break
    with pytest.raises(RuntimeError, match="not been read to the end"):
        reader.rejection()
    reader.close()


def test_a_line_longer_than_a_mebibyte_without_newline_is_refused() -> None:
    body = csv_body(row("T1")) + b"x" * (1024 * 1024 + 10)
    rejection = rejected(pieces(body, 65_536))
    assert rejection.status_code == 400
    line, _, reason = only_problem(rejection)
    assert line == 3
    assert "longer than" in reason
