"""``billing cost``: dollars from known counts, at the list prices and at overridden ones."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from billing.cli.app import app
from billing.cost_sources import (
    UnknownSourceError,
    usage_from_file,
    usage_from_live,
)
from initiator.observability.fleet import ProcessorInstance
from initiator.observability.history import Sample
from initiator.observability.live import LiveView
from shared.cost.estimate import Usage, estimate, keda_polls_per_hour, with_idle
from shared.cost.prices import AzurePrices

runner = CliRunner()
PRICES = AzurePrices()
#: Per 1,000 transactions: one of each storage class, a free delete, a bus send per million.
BUSY = {
    "blob.put": 1.0,
    "blob.get": 1.0,
    "queue.get": 2.0,
    "table.write": 1.0,
    "blob.delete": 1.0,
    "bus.send": 0.001,
}


def test_a_million_transactions_cost_each_request_class_at_its_price() -> None:
    costs = estimate(Usage(BUSY, cpu_us_per_transaction=20.0), PRICES)

    # per million: 1,000 blob writes at $0.05 / 10,000, 1,000 blob reads and 2,000 queue
    # operations at $0.004 / 10,000, 1,000 table writes at $0.00036 / 10,000, deletes free
    assert costs.storage_per_million == pytest.approx(0.005 + 0.0004 + 0.0008 + 0.000036)
    assert costs.bus_per_million == pytest.approx(1 * 0.80 / 1_000_000)
    # 20 µs x 1 M = 20 vCPU-s at $0.000024, and 40 GiB-s at $0.000003
    assert costs.compute_per_million == pytest.approx(20 * 0.000024 + 40 * 0.000003)
    assert costs.per_million == pytest.approx(
        costs.storage_per_million + costs.bus_per_million + 0.0006
    )


def test_without_a_cpu_figure_compute_is_unknown_not_free() -> None:
    costs = estimate(Usage(BUSY), PRICES)
    assert costs.compute_per_million is None
    assert costs.per_million == pytest.approx(costs.storage_per_million + costs.bus_per_million)


def test_an_idle_month_is_the_fixed_charges_and_keda_polls() -> None:
    usage = with_idle(Usage({}), keda_polls_per_hour(queues=13, polling_seconds=30))
    costs = estimate(usage, PRICES)

    assert costs.fixed_per_month == pytest.approx(
        {
            "PostgreSQL B1ms": 0.017 * 730,
            "PostgreSQL storage": 32 * 0.115,
            "Service Bus Standard base": 0.0135 * 730,
            "Container Registry Basic": 0.167 * 730 / 24,
        }
    )
    # 13 queues every 30 s: 1,560 depth reads an hour, 1,138,800 a month
    assert costs.idle_requests_per_month == pytest.approx(1560 * 730 * 0.004 / 10_000)
    assert costs.per_idle_month == pytest.approx(31.48, abs=0.01)  # the README's ≈ $31


def test_idle_bus_operations_are_billed_only_beyond_those_included() -> None:
    within = estimate(Usage({}, idle_requests_per_hour={"bus.receive": 60.0}), PRICES)
    assert within.idle_requests_per_month == 0
    # 20,000 receives an hour: 14.6 M a month, 1.6 M beyond the 13 M included
    beyond = estimate(Usage({}, idle_requests_per_hour={"bus.receive": 20_000.0}), PRICES)
    assert beyond.idle_requests_per_month == pytest.approx(1.6 * 0.80)


def test_a_price_is_overridden_by_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BILLING_PRICE_QUEUE_PER_10K", "0.008")
    costs = estimate(Usage({"queue.get": 2.0}), AzurePrices())
    assert costs.storage_per_million == pytest.approx(2000 * 0.008 / 10_000)


def report_file(tmp_path: Path, figures: dict[str, float]) -> Path:
    path = tmp_path / "end_to_end.json"
    path.write_text(
        json.dumps({"benchmark": "end_to_end", "quick": False, "figures": figures}),
        encoding="utf-8",
    )
    return path


def test_a_bench_report_gives_requests_by_kind_and_the_roles_cpu(tmp_path: Path) -> None:
    figures = {f"hot_path.kind.{kind}.requests_per_1000": n for kind, n in BUSY.items()}
    figures |= {
        "hot_path.requests_per_1000": 6.0,
        "hot_path.initiator.cpu_us_per_transaction": 11.0,
        "hot_path.processor.cpu_us_per_transaction": 9.0,
        "hot_path.controller.cpu_us_per_transaction": 26.0,
    }
    usage = usage_from_file(report_file(tmp_path, figures))
    assert usage.requests_per_1000 == BUSY
    assert usage.cpu_us_per_transaction == pytest.approx(46.0)


def test_a_report_without_requests_by_kind_is_refused_with_what_to_run(tmp_path: Path) -> None:
    path = report_file(tmp_path, {"celery.transactions_per_second": 1.0})
    with pytest.raises(UnknownSourceError, match=r"bench\.end_to_end --json"):
        usage_from_file(path)
    other = tmp_path / "other.json"
    other.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(UnknownSourceError, match="neither a bench report"):
        usage_from_file(other)


def sample(seq: int, applied: float, requests: dict[str, float]) -> Sample:
    return Sample(
        seq=seq,
        taken_at=datetime(2026, 12, 1, tzinfo=UTC) + timedelta(seconds=2 * seq),
        queue_depths={},
        processors=[],
        rated_per_second=applied,
        applied_per_second=applied,
        requests_per_minute=requests,
    )


def live_view(samples: list[Sample], processors: list[ProcessorInstance] | None = None) -> LiveView:
    return LiveView(
        generated_at=datetime(2026, 12, 1, tzinfo=UTC),
        age_seconds=0,
        sample_seconds=2,
        window_seconds=900,
        batch_counts={},
        batches=[],
        processors=processors or [],
        queues=[],
        samples=samples,
    )


def test_the_live_view_splits_busy_samples_from_idle_ones() -> None:
    view = live_view(
        [
            sample(1, 0.0, {"queue.count": 12.0}),  # idle: 12 a minute
            sample(2, 1000.0, {"queue.get": 60.0, "blob.put": 30.0}),  # 60,000 tx a minute
            sample(3, 1000.0, {"queue.get": 60.0, "blob.put": 30.0}),
            sample(4, 0.0, {"queue.count": 12.0, "table.write": 2.0}),
        ]
    )
    usage = usage_from_live(view)
    assert usage.requests_per_1000 == pytest.approx({"queue.get": 1.0, "blob.put": 0.5})
    assert usage.idle_requests_per_hour == pytest.approx(
        {"queue.count": 720.0, "table.write": 60.0}
    )
    assert usage.cpu_us_per_transaction is None


def processor(instance: str, pid: int, rated: int, requests: dict[str, int]) -> ProcessorInstance:
    return ProcessorInstance(
        instance=instance,
        host="h",
        pid=pid,
        status="running",
        taken_at=datetime(2026, 12, 1, tzinfo=UTC),
        rated_transactions=rated,
        storage_requests=requests,
    )


def test_without_a_busy_sample_the_processors_counters_give_the_busy_figures() -> None:
    # Nobody watched while the batch ran: the samples are idle, the heartbeats remember.
    one_process = {"queue.get": 30, "blob.put": 10, "queue.count@dashboard": 500}
    view = live_view(
        [sample(1, 0.0, {"queue.count@dashboard": 750.0, "table.read": 2.0})],
        [
            processor("a", 1, 15_000, one_process),  # two instances of one process:
            processor("b", 1, 5_000, one_process),  # its counts once, both ratings
            processor("c", 2, 20_000, {"queue.get": 10}),
        ],
    )
    usage = usage_from_live(view)
    assert usage.requests_per_1000 == pytest.approx({"blob.put": 0.25, "queue.get": 1.0})
    # The dashboard's own queries are the watcher's cost, not the idle deployment's.
    assert usage.idle_requests_per_hour == pytest.approx({"table.read": 120.0})


def test_the_command_says_no_traffic_was_measured_rather_than_pricing_zero(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "live.json"
    idle = live_view([sample(1, 0.0, {"table.read": 2.0})], [processor("a", 1, 0, {})])
    saved.write_text(idle.model_dump_json(), encoding="utf-8")
    done = runner.invoke(app, ["cost", str(saved)], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    assert "no transactions measured yet" in done.output
    assert "0.0000" not in done.output
    assert "per million transactions" not in done.output
    assert "per idle month" in done.output  # still priced: it needs no transaction
    assert usage_from_live(idle).transactions_measured is False
    as_json = runner.invoke(app, ["cost", str(saved), "--json"])
    assert as_json.exit_code == 0, as_json.output
    shown = json.loads(as_json.stdout)
    assert shown["per_million_transactions"] is None
    assert shown["per_idle_month"]["total"] > 0


def test_the_command_prints_the_figures_from_a_report(tmp_path: Path) -> None:
    figures = {f"hot_path.kind.{kind}.requests_per_1000": n for kind, n in BUSY.items()}
    figures["hot_path.processor.cpu_us_per_transaction"] = 20.0
    done = runner.invoke(app, ["cost", str(report_file(tmp_path, figures)), "--json"])
    assert done.exit_code == 0, done.output
    shown = json.loads(done.output)
    expected = estimate(
        with_idle(Usage(BUSY, 20.0), keda_polls_per_hour(13, 30)), PRICES
    )  # the default settings: 3 priorities x 4 partitions + the results queue
    assert shown["per_million_transactions"]["total"] == pytest.approx(expected.per_million)
    assert shown["per_idle_month"]["total"] == pytest.approx(expected.per_idle_month)
    assert shown["prices_read_on"] == "2026-12-01"


def test_the_command_needs_a_source() -> None:
    done = runner.invoke(app, ["cost"])
    assert done.exit_code == 2
    assert "FILE or --live" in done.output
