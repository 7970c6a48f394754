"""The live charts in a real headless Chromium, while a batch large enough to watch runs.

An all-in-one deployment of its own (uvicorn, a processor and a controller in one process,
embedded storage, SQLite), with a scaling rule that adds dequeue threads as the queues fill.
The page is open before the batch is submitted, so its charts see the depth rise and fall
and the threads come and go; then what the page shows is compared with ``GET
/dashboard/live``. The screenshot goes to ``$BILLING_DASHBOARD_SCREENSHOT`` with the stem
``-live`` added (default ``/tmp/dashboard-live.png``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.batch_files import csv_file, rows
from tests.dashboard.serving import all_in_one
from tests.dashboard.test_dashboard_browser import (
    SCREENSHOT,
    browser,  # noqa: F401  (a fixture)
    require_chromium,
    sign_in,
)

with contextlib.suppress(ImportError):  # without the dev extra, require_chromium decides
    from playwright.sync_api import BrowserContext, Page, expect

API_KEY = "live-charts-test-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
APPEAR_MS = 30_000
#: Enough chunks for several seconds of work and a scaling rule that reaches 3 threads.
TRANSACTIONS = 40_000
CHUNK_SIZE = 100
COMPLETE_MS = 180_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_chromium()
    with all_in_one(
        tmp_path_factory.mktemp("live-deployment"),
        API_KEY,
        chunk_size=CHUNK_SIZE,
        scaling_rule="0:1,40:2,150:3",
        max_dequeue_threads=3,
    ) as url:
        yield url


def series_line(page: Page, chart: str, series: str) -> dict[str, float]:
    """The figures a chart's line carries (data-count, -first, -max, -last)."""
    found: dict[str, float] | None = page.evaluate(
        """([chart, series]) => {
            const line = [...document.querySelectorAll(`#${chart} path.series`)]
                .find((l) => l.dataset.series === series);
            if (!line || line.dataset.count === "0") return null;
            const d = line.dataset;
            return {count: +d.count, first: +d.first, max: +d.max, last: +d.last};
        }""",
        [chart, series],
    )
    assert found is not None, f"no points for {series!r} in #{chart}"
    return found


def control(base_url: str, action: str) -> None:
    response = httpx.post(f"{base_url}/control/{action}", headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text


def api_live(base_url: str) -> dict[str, Any]:
    response = httpx.get(f"{base_url}/dashboard/live", headers=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_charts_follow_a_batch_and_the_page_matches_the_api(
    served: str,
    browser: BrowserContext,  # noqa: F811
) -> None:
    page = browser.new_page()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(served)
    sign_in(page, API_KEY)
    expect(page.locator("#board")).to_be_visible()
    # The sampler has started: the charts draw from the first samples on.
    expect(page.locator("#chart-depth-normal path.series")).to_have_count(2)

    # The release gate held: the batch waits on its queues, so the charts see the depth rise
    # whatever the machine's speed; released, the processor scales up and drains them.
    control(served, "hold")
    response = httpx.post(
        f"{served}/batches",
        content=csv_file(rows(TRANSACTIONS)),
        headers={**AUTH, "Content-Type": "text/csv"},
        timeout=120,
    )
    assert response.status_code == 202, response.text
    batch_id = response.json()["batch_id"]
    chunks = response.json()["chunks"]
    page.wait_for_function(
        """(chunks) => [...document.querySelectorAll('#chart-depth-normal path.series')]
                 .reduce((sum, l) => sum + Number(l.dataset.last || 0), 0) === chunks""",
        arg=chunks,
        timeout=APPEAR_MS,
    )
    started = time.monotonic()
    control(served, "release")
    row = page.locator(f'#batches tbody tr[data-key="{batch_id}"]')
    expect(row.locator("td.status")).to_have_text("completed", timeout=COMPLETE_MS)
    elapsed = time.monotonic() - started
    print(f"{TRANSACTIONS:,} transactions completed {elapsed:.1f} s after the release")

    # The depth rose while the batch was held, and is back to zero.
    partitions = [series_line(page, "chart-depth-normal", f"partition {n}") for n in (0, 1)]
    assert sum(p["max"] for p in partitions) == chunks
    assert all(p["first"] == 0 for p in partitions)
    page.wait_for_function(
        """() => [...document.querySelectorAll('#chart-depth-normal path.series')]
                 .every((l) => l.dataset.last === "0")"""
    )
    # The results queue filled between the processor and the controller.
    assert series_line(page, "chart-depth-other", "results")["count"] >= 2

    # The processor started dequeue threads as the depth rose (the rule gives up to 3 for
    # this depth), and they retired once the queues were empty. A fast processor starts and
    # retires them between two heartbeats: the active line is each beat's peak (held 6 s,
    # longer than the page's 2-second samples, so no sample misses it), so it rose
    # to the threads that ran however short their lives, and came back to zero.
    # A batch can close within a heartbeat of the release, before the beat that carries
    # the threads reaches the page, so the lines are awaited, not read at once.
    instance = page.locator("#processors tbody tr").first.get_attribute("data-key")
    started_label = f"{instance} started"
    active_label = f"{instance} active (peak per beat)"
    page.wait_for_function(
        """([started, active]) => {
            const lines = [...document.querySelectorAll('#chart-threads path.series')];
            const line = (label) => lines.find((l) => l.dataset.series === label);
            const s = line(started), a = line(active);
            return s && a && s.dataset.max - s.dataset.first >= 2 && a.dataset.max >= 2;
        }""",
        arg=[started_label, active_label],
        timeout=APPEAR_MS,
    )
    started = series_line(page, "chart-threads", started_label)
    assert started["max"] - started["first"] >= 2, started
    active = series_line(page, "chart-threads", active_label)
    assert active["max"] >= 2, active
    page.wait_for_function(
        """(label) => [...document.querySelectorAll('#chart-threads path.series')]
                 .some((l) => l.dataset.series === label && l.dataset.last === "0")""",
        arg=active_label,
        timeout=APPEAR_MS,
    )
    applied = series_line(page, "chart-throughput", "applied")
    assert applied["max"] > 0
    # Rated as it happened: the series rose while the chunks were rated and is back to
    # zero once they all are (within a few samples, not a beat interval repeated).
    assert series_line(page, "chart-throughput", "rated")["max"] > 0
    page.wait_for_function(
        """() => [...document.querySelectorAll('#chart-throughput path.series')]
                 .some((l) => l.dataset.series === "rated" && l.dataset.last === "0")""",
        timeout=APPEAR_MS,
    )
    # The dashboard's own depth queries are labelled as its own in the request chart.
    assert series_line(page, "chart-requests", "queue.count (by the dashboard)")["max"] > 0

    # What the page shows is what the API says.
    cells = row.locator("td")
    expect(cells.nth(4)).to_have_text(f"{chunks} / 0 / {chunks}")
    expect(cells.nth(5)).to_have_text(f"{TRANSACTIONS:,}")
    expect(cells.nth(6)).to_have_text("yes")
    bar = row.locator('[role="progressbar"]')
    assert bar.get_attribute("aria-valuenow") == str(chunks)
    view = api_live(served)
    [progress] = [b for b in view["batches"] if b["batch"]["batch_id"] == batch_id]
    assert progress["batch"]["chunks"]["applied"] == chunks
    expect(cells.nth(8)).to_have_text(f"{round(progress['transactions_per_second']):,}")
    # The time the gate held the batch is shown apart from its processing time.
    waited = progress["batch"]["timings"]["waiting_for_release_seconds"]
    assert waited > 0
    expect(cells.nth(7)).to_have_text(
        f"{progress['processing_seconds']:.1f} s + {waited:.1f} s waiting for release"
    )
    # A fast batch can be over within four samples (one every 2 s): wait for the fifth
    # rather than read too early, then ask the API, whose ring holds every older sample.
    page.wait_for_function("() => window.BillingLive.samples.length >= 5", timeout=APPEAR_MS)
    page_samples: list[dict[str, Any]] = page.evaluate("window.BillingLive.samples")
    api_samples = {sample["seq"]: sample for sample in api_live(served)["samples"]}
    compared = [s for s in page_samples if s["seq"] in api_samples]
    assert len(compared) >= 5
    for sample in compared:
        expected = api_samples[sample["seq"]]
        assert sample["queue_depths"] == expected["queue_depths"]
        assert sample["processors"] == expected["processors"]

    page.screenshot(path=str(screenshot_path()), full_page=True)


def screenshot_path() -> Path:
    return SCREENSHOT.with_stem(f"{SCREENSHOT.stem}-live")


def test_a_gap_in_the_samples_is_not_drawn_as_a_line(
    served: str,
    browser: BrowserContext,  # noqa: F811
) -> None:
    page = browser.new_page()
    page.goto(served)  # the page's own chart code, on a figure of the test's
    strokes = page.evaluate(
        """() => {
            const figure = document.createElement("figure");
            figure.innerHTML =
                '<figcaption>t</figcaption><div class="plot"></div><ul class="legend"></ul>';
            document.body.append(figure);
            const points = [[0, 1], [2000, 2], [4000, 3], [60000, 4], [62000, 5]];
            BillingCharts.drawLineChart(figure, {
                series: [{label: "s", points}], start: 0, end: 62000, gapMs: 6000,
            });
            const d = figure.querySelector("path.series").getAttribute("d");
            return [d.split("M").length - 1, d.split("L").length - 1, figure.textContent];
        }"""
    )
    assert strokes[:2] == [2, 3]  # two strokes: 3 points joined, a gap, 2 points joined
    assert "s: 5" in strokes[2]  # the legend gives the latest value


def test_stacked_series_are_bands_whose_top_is_the_total(
    served: str,
    browser: BrowserContext,  # noqa: F811
) -> None:
    page = browser.new_page()
    page.goto(served)
    drawn = page.evaluate(
        """() => {
            const figure = document.createElement("figure");
            figure.innerHTML =
                '<figcaption>t</figcaption><div class="plot"></div><ul class="legend"></ul>';
            document.body.append(figure);
            BillingCharts.drawLineChart(figure, {
                series: [
                    {label: "p0", points: [[0, 1], [1000, 2]]},
                    {label: "p1", points: [[0, 3], [1000, 4]]},
                ],
                start: 0, end: 1000, stacked: true,
            });
            const ticks = [...figure.querySelectorAll("text.tick")].map((t) => t.textContent);
            const lines = [...figure.querySelectorAll("path.series")].map((p) => p.dataset.max);
            return [figure.querySelectorAll("path.band").length, ticks, lines];
        }"""
    )
    bands, ticks, maxima = drawn
    assert bands == 2
    assert "10" in ticks  # the axis reaches the total (2 + 4 = 6), rounded up
    assert maxima == ["2", "4"]  # each line still carries its own partition's figures
