"""The intake's helper processes give every batch file the answer the serial reader gives.

Each file goes through two initiators on the same storage: one reading every batch on the
request's thread (``BILLING_INTAKE_PROCESSES=1``), one with two helper processes that take
clean files in segments (initiator.segmented_read). An accepted file must yield the same
transactions, line by line, and the same control totals; a rejected one the very same
response, and no trace. Which path each took is checked too: a clean file must have been
taken by the helpers, and anything else read again by the serial reader. The helpers
check segments of half a chunk, which the initiator puts back together into the chunks
whole segments would have made.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

import psutil
import pytest

from initiator.intake.blank_lines import MAX_BLANK_LINES
from initiator.intake_helpers import shared_helpers
from shared.contracts.chunk_payload import NumberedTransaction
from shared.settings import Settings
from tests.api.batch_files import COLUMNS, csv_file, expected, gzipped, jsonl_file, row, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import AUTH, started_api
from tests.api.observe import payload_chunks, payload_rows

pytestmark = pytest.mark.anyio

CSV = {**AUTH, "Content-Type": "text/csv"}
JSONL = {**AUTH, "Content-Type": "application/x-ndjson"}
READ_AGAIN = "is read again by the serial reader"
ROWS = 95  # in chunks of 10 lines (the API tests' chunk size): 10 chunks
SEGMENT_LINES = 5  # two segments a chunk; the last chunk, 5 lines, ends where a segment does


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    helpers_take_it: bool
    """Whether the helpers answer (a clean file) or the serial reader reads it again."""
    headers: dict[str, str] = field(default_factory=lambda: CSV)


def _csv_lines(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


_HEADER = ",".join(COLUMNS)
_GOOD = [",".join(item[c] for c in COLUMNS) for item in rows(ROWS)]


def _replaced(number: int, line: str) -> bytes:
    """The good file with data line ``number`` (0-based) replaced by ``line``."""
    lines = list(_GOOD)
    lines[number] = line
    return _csv_lines(_HEADER, *lines)


def _duplicate(first: int, again: int) -> bytes:
    lines = list(_GOOD)
    lines[again] = ",".join(row(again, transaction_id=f"tx-{first:05d}")[c] for c in COLUMNS)
    return _csv_lines(_HEADER, *lines)


CASES = [
    Case("csv", csv_file(rows(ROWS)), helpers_take_it=True),
    Case("jsonl", jsonl_file(rows(ROWS)), helpers_take_it=True, headers=JSONL),
    Case("gzip", gzipped(csv_file(rows(ROWS))), True, {**CSV, "Content-Encoding": "gzip"}),
    Case("crlf", csv_file(rows(ROWS), newline="\r\n"), helpers_take_it=True),
    Case("bom", b"\xef\xbb\xbf" + csv_file(rows(ROWS)), helpers_take_it=True),
    Case("no final newline", csv_file(rows(ROWS), final_newline=False), helpers_take_it=True),
    Case("blank lines", _csv_lines(_HEADER, *_GOOD[:30], "", " ", *_GOOD[30:]), True),
    Case("sniffed jsonl", jsonl_file(rows(ROWS)), True, {**AUTH, "Content-Type": "text/plain"}),
    Case("one chunk", csv_file(rows(7)), helpers_take_it=True),
    # Accepted by the serial reader, which alone reads these:
    Case("quoted fields", _replaced(40, ",".join(f'"{v}"' for v in row(40).values())), False),
    Case("blank line before the header", b"\n" + csv_file(rows(ROWS)), False),
    # Rejected: the serial reader words it.
    Case("bad value", _replaced(56, ",".join(row(56, region="Mars")[c] for c in COLUMNS)), False),
    Case("duplicate across chunks", _duplicate(3, 80), False),
    Case("duplicate within a chunk", _duplicate(41, 44), False),
    Case("too few fields", _replaced(70, "tx-x,cust-1,API-CALLS"), False),
    Case("invalid UTF-8", csv_file(rows(ROWS)).replace(b"tx-00033", b"tx-\xff0033"), False),
    Case("header without a column", _csv_lines("transaction_id,customer_id", "a,b"), False),
    Case("header only", _csv_lines(_HEADER), False),
    Case("empty", b"", False),
    Case("bad JSON", jsonl_file(rows(30)) + b"{not json\n", False, JSONL),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_the_helpers_answer_as_the_serial_reader_does(
    case: Case, make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    serial = await _answer(make_settings(intake_processes=1), case, caplog)
    assert READ_AGAIN not in serial.log
    helpers = make_settings(intake_processes=2, intake_segment_lines=SEGMENT_LINES)
    helped = await _answer(helpers, case, caplog)

    assert helped.status == serial.status
    assert helped.body == serial.body
    assert helped.rows == serial.rows
    assert helped.control_totals == serial.control_totals
    if serial.status != 202:
        assert serial.trace_unchanged, "a rejection leaves no trace"
        assert helped.trace_unchanged, "a rejection leaves no trace"
    assert (READ_AGAIN not in helped.log) == case.helpers_take_it, helped.log


@dataclass(frozen=True)
class _Answer:
    status: int
    body: dict[str, Any]
    """The response, without the names the batch was stored under."""
    chunks: list[list[NumberedTransaction]]
    control_totals: dict[str, Any] | None
    trace_unchanged: bool
    log: str

    @property
    def rows(self) -> list[NumberedTransaction]:
        return [row for chunk in self.chunks for row in chunk]


async def _answer(settings: Settings, case: Case, caplog: pytest.LogCaptureFixture) -> _Answer:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="initiator"):
        async with started_api(settings) as api:
            before = api.trace()
            response = await api.post_batch(case.body, case.headers)
            body = response.json()
            stored, totals = [], None
            if response.status_code == 202:
                stored = payload_chunks(api.services.storage, api.settings, body["batch_id"])
                status = await api.client.get(f"/batches/{body['batch_id']}", headers=AUTH)
                totals = status.raise_for_status().json()["control_totals"]
            unchanged = api.trace() == before
    names = {"batch_id", "status_url"}
    content = {key: value for key, value in body.items() if key not in names}
    return _Answer(response.status_code, content, stored, totals, unchanged, caplog.text)


@pytest.mark.parametrize(
    "case", [case for case in CASES if case.helpers_take_it], ids=lambda case: case.name
)
async def test_a_chunk_checked_in_segments_is_stored_as_the_chunk_it_is(
    case: Case, make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Blank lines count as lines of the plan here (the serial reader counts transactions),
    so the reference is the helpers checking whole chunks."""
    whole = await _answer(make_settings(intake_processes=2), case, caplog)
    in_parts = make_settings(intake_processes=2, intake_segment_lines=SEGMENT_LINES)
    parts = await _answer(in_parts, case, caplog)

    assert whole.status == 202, whole.body
    assert parts.chunks == whole.chunks
    assert READ_AGAIN not in parts.log


async def test_blank_lines_count_against_the_cap_across_chunks(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Each chunk's share of blank lines is far below the cap, the file's total is not."""
    blanks_between = 2_000  # after each of 60 lines: 120,000 blank lines in all
    lines = [_HEADER]
    for good in _GOOD[:60]:
        lines += [good] + [""] * blanks_between
    lines.append(_GOOD[60])  # so that no segment is all blank (that alone is not clean)
    assert 60 * blanks_between > MAX_BLANK_LINES
    case = Case("many blank lines", _csv_lines(*lines), helpers_take_it=False)
    settings = {"chunk_size": 4_000}
    serial = await _answer(make_settings(intake_processes=1, **settings), case, caplog)
    helped = await _answer(make_settings(intake_processes=2, **settings), case, caplog)

    assert serial.status == 400, serial.body
    assert (helped.status, helped.body) == (serial.status, serial.body)
    assert READ_AGAIN in helped.log


def _helper_pids() -> set[int]:
    """The pids of this process's intake helpers (spawned children)."""
    pids = set()
    for child in psutil.Process().children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):  # a helper (intake_helpers)
                pids.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return pids


async def test_a_helper_that_died_costs_a_serial_read_not_the_batch(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(intake_processes=2)
    helpers = shared_helpers(2, gc_young_threshold=settings.gc_young_threshold)
    body = csv_file(rows(ROWS))
    async with started_api(settings) as api:
        assert (await api.post_batch(body, CSV)).status_code == 202
        assert helpers.started
        killed = 0
        for pid in _helper_pids():
            try:
                child = psutil.Process(pid)
                child.kill()
                child.wait(10)
                killed += 1
            except psutil.NoSuchProcess:
                continue  # it ended meanwhile
        assert killed, "no helper process found"
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="initiator"):
            response = await api.post_batch(body, CSV)
            assert response.status_code == 202, response.text
            assert READ_AGAIN in caplog.text
            batch_id = response.json()["batch_id"]
            assert f"{READ_AGAIN} as batch {batch_id}" in caplog.text, "the log leads to it"
            assert payload_rows(api.services.storage, api.settings, batch_id) == expected(
                rows(ROWS)
            )
            caplog.clear()
            assert (await api.post_batch(body, CSV)).status_code == 202
            assert "started 2 intake helper processes" in caplog.text, "a new pool took it"
            assert READ_AGAIN not in caplog.text


_UNUSED_THRESHOLDS = itertools.count(54_321)


async def test_the_helpers_start_with_the_initiator_not_with_its_first_batch(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # A young-generation threshold no other test uses: a pool of this run's own.
    settings = make_settings(intake_processes=2, gc_young_threshold=next(_UNUSED_THRESHOLDS))
    helpers = shared_helpers(2, gc_young_threshold=settings.gc_young_threshold)
    before = _helper_pids()
    try:
        with caplog.at_level(logging.INFO, logger="initiator"):
            async with started_api(settings) as api:
                assert helpers.started, "up before any batch"
                assert len(_helper_pids() - before) == 2, "both helpers spawned at start"
                assert "started 2 intake helper processes" in caplog.text
                caplog.clear()
                response = await api.post_batch(csv_file(rows(ROWS)), CSV)
                assert response.status_code == 202, response.text
                assert "started" not in caplog.text, "the first batch found the pool up"
                assert READ_AGAIN not in caplog.text, "and the helpers took it"
                assert "could not import" not in caplog.text
    finally:
        helpers.close()
