"""Every benchmark runs in ``--quick`` mode and produces its figures.

Benchmarks measure; tests must not. So these tests look only at *whether* each benchmark
ran to the end and reported the figures it promises (names, finite numbers), never at their
values. Each runs as ``python -m bench.<name>`` from the repository root, as ``billing
bench`` runs it.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import load_report
from bench.run import BENCHMARKS, NEEDS_AZURITE, REPO_ROOT, available
from billing.devtools.azurite import AzuriteUnavailableError, azurite_dir, ensure_azurite
from tests.support.azurite import unavailable

#: Figures each of these benchmarks must report (others: at least one figure).
PROMISED: dict[str, set[str]] = {
    "scaling": {"embedded.t1.ratio_vs_1", "embedded.t4.ratio_vs_1", "threads_worth_it"},
    "idle": {
        "naive.requests_per_hour",
        "backoff.requests_per_hour",
        "trigger.requests_per_hour",
        "processor.requests_per_hour",
        "naive_over_backoff",
        "naive_over_trigger",
    },
    "intake": {
        *(
            f"duplicates.{shape}.{figure}"
            for shape in ("small", "large")
            for figure in (
                "off.transactions_per_s",
                "on.transactions_per_s",
                "override.transactions_per_s",
                "on_over_off",
                "override_over_off",
                "on_table_requests_added",
            )
        ),
        "duplicates.claim_ms",
        "duplicates.sha256_ms_per_mb",
        *(
            f"transaction_ids.{shape}.{figure}"
            for shape in ("small", "large")
            for figure in ("on_over_off", "full_window_over_off")
        ),
        *(f"segment_{shape}_line_check_over_fast_path" for shape in ("base", "jsonl")),
    },
    "upload": {"upload_to_body_ratio", "body_peak_rss_mb", "upload_peak_rss_mb"},
    "trigger_latency": {"trigger.median_ms", "polling.median_ms", "polling_over_trigger"},
    "end_to_end": {
        "end_to_end.transactions_per_second",
        "bare.transactions_per_second",
        "end_to_end_over_bare",
        "hot_path.requests_per_1000",
        "hot_path.kind.queue.get.requests_per_1000",  # what `billing cost` prices
    },
    "stream": {
        "one.transactions_per_second",
        "stream.transactions_per_second",
        "stream_over_one",
        "lean.transactions_per_second",
    },
    "soak": {
        "initiator.descriptors_end_over_warm",
        "processor.descriptors_end_over_warm",
        "controller.descriptors_end_over_warm",
        "all_flat",
    },
    "celery_reference": {
        "celery.transactions_per_second",
        "ours.transactions_per_second",
        "ours_over_celery",
        "celery.requests_per_1000",
        "ours.requests_per_1000",
        "celery_requests_over_ours",
        "celery_plain.transactions_per_second",
        "ours.requests_per_1000_without_status_polls",
        "ours_stream_over_celery",
    },
}


def run_quick(name: str, tmp_path: Path, *extra: str) -> dict[str, float]:
    """Run one benchmark in quick mode; its figures (fails with its output if it failed)."""
    json_path = tmp_path / f"{name}.json"
    command = [sys.executable, "-m", f"bench.{name}", "--quick", "--json", str(json_path), *extra]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"bench.{name} failed:\n{done.stdout}\n{done.stderr}"
    report = load_report(json_path)
    assert report.benchmark == name
    assert report.quick
    assert report.figures, f"bench.{name} reported no figures:\n{done.stdout}"
    assert all(math.isfinite(value) for value in report.figures.values())
    return report.figures


@pytest.mark.parametrize("name", [name for name in available() if name not in NEEDS_AZURITE])
def test_benchmark_produces_its_figures(name: str, tmp_path: Path) -> None:
    figures = run_quick(name, tmp_path)
    missing = PROMISED.get(name, set()) - figures.keys()
    assert not missing, f"bench.{name} did not report {sorted(missing)}"


def test_end_to_end_runs_a_shape_it_is_given(tmp_path: Path) -> None:
    """``--shape`` sends the generated shape's file (JSON Lines, gzip) through the roles and
    reports its line of the matrix, CPU per role included, beside the lean loop on the same
    rows in each of two rounds."""
    figures = run_quick("end_to_end", tmp_path, "--shape", "jsonl", "--gzip", "--rounds", "2")
    key = "matrix.jsonl*.0ms"
    assert {
        f"{key}.transactions_per_second",
        f"{key}.requests_per_1000",
        f"{key}.initiator.cpu_us_per_transaction",
        f"{key}.processor.cpu_us_per_transaction",
        f"{key}.controller.cpu_us_per_transaction",
        f"{key}.lean.transactions_per_second",
        f"{key}.ours_over_lean",
        f"{key}.ours_over_lean.lowest",
        f"{key}.ours_over_lean.highest",
        "matrix.0ms.worst_ours_over_lean",
    } <= figures.keys()


def test_end_to_end_takes_rounds_only_for_the_shape_matrix() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.end_to_end", "--quick", "--rounds", "2"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--rounds applies to the shape matrix" in done.stderr


#: Opt in to the slow smoke test of bench.celery_reference.
CELERY_SMOKE_ENV = "BILLING_BENCH_CELERY"


@pytest.mark.azurite
@pytest.mark.skipif(
    not os.environ.get(CELERY_SMOKE_ENV),
    reason="bench.celery_reference --quick starts an emulator, a Celery worker and the four "
    "roles of the project: 20 s on a quiet 2-core machine, 32-45 s at the usual load, over "
    f"the 30 s a smoke test may take; set {CELERY_SMOKE_ENV}=1 to run it",
)
def test_celery_reference_produces_its_figures(tmp_path: Path) -> None:
    # Celery is the optional ``bench`` extra, which scripts/bootstrap.sh installs: a
    # missing one is a broken setup, so this fails rather than skips.
    try:
        ensure_azurite(azurite_dir())
    except AzuriteUnavailableError as error:
        unavailable(str(error))
    figures = run_quick("celery_reference", tmp_path)
    missing = PROMISED["celery_reference"] - figures.keys()
    assert not missing, f"bench.celery_reference did not report {sorted(missing)}"


@pytest.mark.azurite
def test_scaling_benchmark_on_azurite(tmp_path: Path) -> None:
    try:
        ensure_azurite(azurite_dir())
    except AzuriteUnavailableError as error:
        unavailable(str(error))
    figures = run_quick("scaling", tmp_path, "--backend", "azurite")
    assert {"azurite.t1.ratio_vs_1", "azurite.t4.requests_per_item"} <= figures.keys()


def test_every_delivered_benchmark_is_in_this_checkout() -> None:
    assert set(PROMISED) <= set(available()) <= set(BENCHMARKS)


def test_cli_lists_the_benchmarks() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "billing.cli", "bench", "--list"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    assert listed == set(BENCHMARKS)


def test_runner_refuses_an_unknown_benchmark() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "no-such-benchmark", "--quick"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown benchmark" in done.stderr
