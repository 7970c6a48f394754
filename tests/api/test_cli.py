"""``billing generate``, ``submit`` (against a real uvicorn) and ``pricebook upload|show``."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from billing.cli.app import app as cli
from initiator.app import create_app
from initiator.intake import parse_batch
from initiator.uploads.ledger import UploadEntry, UploadLedger, UploadState
from shared.domain.pricebook import sample_pricebook
from shared.settings import Settings
from shared.storage import open_storage
from tests.api.batch_files import csv_file, row, rows
from tests.api.conftest import SettingsFactory
from tests.api.harness import API_KEY

runner = CliRunner()


@pytest.fixture
def backend() -> str:
    return "embedded"


@pytest.fixture
def server(settings: Settings) -> Iterator[str]:
    """The initiator on a real socket (uvicorn in a thread); yields its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not instance.started:
        assert thread.is_alive(), "uvicorn stopped while starting"
        assert time.monotonic() < deadline, "uvicorn did not start within 30 s"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        instance.should_exit = True
        thread.join(timeout=10)


def _count(path: Path, content_type: str, encoding: str | None = None) -> int:
    reader = parse_batch(
        [path.read_bytes()],
        content_type=content_type,
        content_encoding=encoding,
        pricebook=sample_pricebook(),
    )
    count = sum(1 for _ in reader)
    assert reader.rejection() is None, reader.problems
    return count


@pytest.mark.parametrize(
    ("fmt", "suffix", "content_type"),
    [("csv", "csv", "text/csv"), ("jsonl", "jsonl", "application/x-ndjson")],
)
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_generate_writes_a_valid_batch(
    tmp_path: Path, fmt: str, suffix: str, content_type: str, compressed: bool
) -> None:
    out = tmp_path / (f"batch.{suffix}" + (".gz" if compressed else ""))
    args = ["generate", "-n", "3000", "--customers", "50", "--format", fmt, "--out", str(out)]
    result = runner.invoke(cli, [*args, *(["--gzip"] if compressed else [])])
    assert result.exit_code == 0, result.output
    assert "3,000 transactions" in result.output
    if compressed:
        assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert _count(out, content_type, "gzip" if compressed else None) == 3000


def test_generate_is_reproducible_by_seed(tmp_path: Path) -> None:
    paths = [tmp_path / f"{name}.csv" for name in ("a", "b", "c")]
    for path, seed in zip(paths, (1, 1, 2), strict=True):
        runner.invoke(cli, ["generate", "-n", "500", "--seed", str(seed), "--out", str(path)])
    assert paths[0].read_bytes() == paths[1].read_bytes() != paths[2].read_bytes()


def test_generated_data_is_realistic(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    runner.invoke(
        cli,
        ["generate", "-n", "5000", "--customers", "40", "--format", "jsonl", "--out", str(path)],
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    book = sample_pricebook()
    assert len({line["customer_id"] for line in lines}) == 40
    assert {line["sku"] for line in lines} == set(book.skus)
    assert {line["region"] for line in lines} <= set(book.regions)
    assert len({line["transaction_id"] for line in lines}) == 5000
    seats = [line["quantity"] for line in lines if line["sku"].startswith("SEAT")]
    calls = [line["quantity"] for line in lines if line["sku"] == "API-CALLS"]
    assert sorted(seats)[len(seats) // 2] < sorted(calls)[len(calls) // 2]


def test_submit_prints_the_batch_id(server: str, tmp_path: Path) -> None:
    path = tmp_path / "batch.csv.gz"
    path.write_bytes(gzip.compress(csv_file(rows(30))))

    result = runner.invoke(
        cli, ["submit", str(path), "--priority", "high", "--url", server, "--api-key", API_KEY]
    )

    assert result.exit_code == 0, result.output
    batch_id = result.stdout.strip()
    status = httpx.get(
        f"{server}/batches/{batch_id}", headers={"Authorization": f"Bearer {API_KEY}"}
    ).json()
    assert (status["status"], status["priority"], status["transactions"]) == (
        "accepted",
        "high",
        30,
    )


def test_submit_takes_a_gzip_file_named_csv(server: str, tmp_path: Path) -> None:
    # Sent as text/csv without Content-Encoding: the intake recognises the gzip body.
    path = tmp_path / "batch.csv"
    path.write_bytes(gzip.compress(csv_file(rows(12))))

    result = runner.invoke(cli, ["submit", str(path), "--url", server, "--api-key", API_KEY])

    assert result.exit_code == 0, result.output
    assert "12 transactions" in result.stderr


def test_submit_shows_the_problems_of_a_rejected_file(server: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(csv_file([row(0), row(1, quantity="0")]))

    result = runner.invoke(cli, ["submit", str(path), "--url", server, "--api-key", API_KEY])

    assert result.exit_code == 1
    assert "rejected (422)" in result.stderr
    assert "line 3 [quantity]" in result.stderr


def test_submit_with_a_wrong_key_fails(server: str, tmp_path: Path) -> None:
    path = tmp_path / "batch.csv"
    path.write_bytes(csv_file(rows(3)))
    result = runner.invoke(cli, ["submit", str(path), "--url", server, "--api-key", "nope"])
    assert result.exit_code == 1
    assert "rejected (401)" in result.stderr


def test_pricebook_upload_validates_and_show_prints_the_current(
    make_settings: SettingsFactory, tmp_path: Path
) -> None:
    settings = make_settings()
    env = {
        "BILLING_DATA_DIR": str(settings.data_dir),
        "BILLING_CONTROL_CONTAINER": settings.control_container,
    }
    bad = tmp_path / "bad.json"
    bad.write_text('{"currency": "USD", "skus": {"X": {"unit_price": 1.5}}, "regions": {}}')
    good = tmp_path / "good.json"
    good.write_bytes(sample_pricebook().to_json())

    rejected = runner.invoke(cli, ["pricebook", "upload", str(bad)], env=env)
    empty = runner.invoke(cli, ["pricebook", "show"], env=env)
    uploaded = runner.invoke(cli, ["pricebook", "upload", str(good)], env=env)
    shown = runner.invoke(cli, ["pricebook", "show"], env=env)

    assert rejected.exit_code == 1
    assert "skus.X.unit_price" in rejected.stderr
    assert "regions" in rejected.stderr
    assert empty.exit_code == 1
    version = sample_pricebook().version_hash()
    assert uploaded.exit_code == 0
    assert version in uploaded.stdout
    assert shown.exit_code == 0
    assert json.loads(shown.stdout) == sample_pricebook().canonical()
    assert version in shown.stderr


def test_cost_reads_the_running_initiators_live_figures(server: str) -> None:
    result = runner.invoke(cli, ["cost", "--live", "--url", server, "--api-key", API_KEY, "--json"])

    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    # Scaled to zero and nothing submitted: the fixed charges and KEDA's polls, at least.
    assert shown["per_idle_month"]["total"] > 31
    assert shown["per_idle_month"]["idle requests"] > 0


def test_cost_with_a_wrong_key_says_what_answered(server: str) -> None:
    result = runner.invoke(cli, ["cost", "--live", "--url", server, "--api-key", "wrong"])

    assert result.exit_code == 1  # reached, and refused
    assert "/dashboard/live answered 401" in result.output
    assert "pass --api-key or set BILLING_API_KEY" in result.output


def _uploads(settings: Settings) -> list[UploadEntry]:
    storage = open_storage(settings)
    try:
        return UploadLedger(storage.table(settings.batches_table)).all()
    finally:
        storage.close()


def test_submit_via_upload_prints_the_batch_id(
    server: str, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "batch.csv.gz"
    path.write_bytes(gzip.compress(csv_file(rows(30))))

    result = runner.invoke(
        cli, ["submit", str(path), "--via-upload", "--url", server, "--api-key", API_KEY]
    )

    assert result.exit_code == 0, result.output
    assert "30 transactions" in result.stderr
    [upload] = _uploads(settings)
    assert (upload.state, upload.batch_id) == (UploadState.ACCEPTED, result.stdout.strip())


def test_submit_uploads_a_file_from_the_threshold_up(
    server: str, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    small, large = tmp_path / "small.csv", tmp_path / "large.csv"
    small.write_bytes(csv_file(rows(3)))
    large.write_bytes(csv_file(rows(4)))
    monkeypatch.setenv("BILLING_SUBMIT_VIA_UPLOAD_BYTES", str(large.stat().st_size))

    for path in (small, large):
        submitted = runner.invoke(cli, ["submit", str(path), "--url", server, "--api-key", API_KEY])
        assert submitted.exit_code == 0, submitted.output

    [upload] = _uploads(settings)  # the small file went as the body
    assert upload.state is UploadState.ACCEPTED


def test_submit_via_upload_shows_the_problems_of_a_rejected_file(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "bad.csv"
    path.write_bytes(csv_file([row(0), row(1, quantity="0")]))

    result = runner.invoke(
        cli, ["submit", str(path), "--via-upload", "--url", server, "--api-key", API_KEY]
    )

    assert result.exit_code == 1
    assert "rejected (422)" in result.stderr
    assert "line 3 [quantity]" in result.stderr
