"""The dashboard in a real headless Chromium, on a real deployment.

The server is ``billing serve --all-in-one``'s :class:`~billing.all_in_one.AllInOne` (uvicorn
on a free port, with a processor and a controller in the process, embedded storage and a
SQLite warehouse), so a submitted batch really moves to ``completed`` on the page. The
browser is Debian's ``chromium`` driven by Playwright over its DevTools protocol (Playwright's
own browser downloads are not used). Without Chromium the tests skip, except under CI.

Screenshots go to ``$BILLING_DASHBOARD_SCREENSHOT`` (default ``/tmp/dashboard.png``), to
look at what a person sees.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.batch_files import csv_file, rows
from tests.dashboard.serving import all_in_one
from tests.support.deployment_settings import deployment_values, settings_factory
from tests.support.live_initiator import serving
from tests.support.rating import rate_work_items

CHROMIUM = Path(os.environ.get("BILLING_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # the tests run as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT = Path(os.environ.get("BILLING_DASHBOARD_SCREENSHOT", "/tmp/dashboard.png"))
API_KEY = "dashboard-test-key"
#: generous: the page refreshes every 2 s, the pipeline needs a few seconds more
APPEAR_MS = 15_000
COMPLETE_MS = 60_000
HEARTBEAT_MS = 30_000

try:
    from playwright.sync_api import BrowserContext, Page, expect, sync_playwright
except ImportError:  # the dev extra is not installed
    sync_playwright = None  # type: ignore[assignment]


def require_chromium() -> None:
    """Skip without a browser on a developer machine; fail under CI, which must have one."""
    missing = None
    if sync_playwright is None:
        missing = "the Python package 'playwright' is not installed (pip install -e .[dev])"
    elif not CHROMIUM.exists():
        missing = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if missing is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the browser test needs Chromium under CI: {missing}", pytrace=False)
    pytest.skip(f"browser test skipped: {missing}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a running all-in-one deployment of its own."""
    require_chromium()  # before starting anything a skipped test would not use
    with all_in_one(tmp_path_factory.mktemp("deployment"), API_KEY, chunk_size=10) as url:
        yield url


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[BrowserContext]:
    """A fresh headless Chromium (its own profile folder) for each test."""
    require_chromium()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 720},
        )
        try:
            yield context
        finally:
            context.close()


def sign_in(page: Page, key: str) -> None:
    expect(page.get_by_label("API key")).to_be_visible()
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Show dashboard").click()


def submit_batch(base_url: str, transactions: int) -> str:
    response = httpx.post(
        f"{base_url}/batches",
        content=csv_file(rows(transactions)),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "text/csv"},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    batch_id: str = response.json()["batch_id"]
    return batch_id


def test_the_dashboard_shows_a_submitted_batch_and_the_processor(
    served: str, browser: BrowserContext
) -> None:
    page = browser.new_page()
    page.goto(served)
    sign_in(page, API_KEY)
    expect(page.locator("#board")).to_be_visible()
    expect(page.locator("#key-error")).to_be_hidden()

    batch_id = submit_batch(served, transactions=25)

    row = page.locator(f'#batches tbody tr[data-key="{batch_id}"]')
    expect(row).to_be_visible(timeout=APPEAR_MS)
    status = row.locator("td.status")
    expect(status).to_have_text(re.compile(r"^(accepted|processing|completed)$"))
    expect(status).to_have_text("completed", timeout=COMPLETE_MS)
    cells = row.locator("td")
    expect(cells.nth(2)).to_have_text("normal")
    expect(cells.nth(4)).to_have_text("3 / 0 / 3")  # chunks applied / failed / total
    expect(cells.nth(5)).to_have_text("25")
    expect(cells.nth(6)).to_have_text("yes")  # reconciled with the warehouse
    expect(cells.nth(7)).to_have_text(re.compile(r"^\d+\.\d s$"))  # end to end
    expect(page.locator("#batch-counts")).to_contain_text("completed: 1")

    processor = page.locator("#processors tbody tr")
    expect(processor).to_have_count(1)
    expect(processor.locator("td").nth(7)).to_have_text(re.compile(r"^\d+ s ago$"))
    # The processor's next heartbeat (every 10 s while busy) reports the 3 chunks it rated.
    expect(processor.locator("td").nth(4)).to_have_text("3", timeout=HEARTBEAT_MS)

    page.reload()  # the key is kept for the tab: no second prompt
    expect(row).to_be_visible(timeout=APPEAR_MS)
    expect(page.locator("#sign-in")).to_be_hidden()
    page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_chunks_rated_but_not_yet_applied_show_in_the_batchs_bar(
    tmp_path: Path, browser: BrowserContext
) -> None:
    # The initiator alone: the test rates two of the three chunks, no controller applies them.
    settings = settings_factory(
        deployment_values(tmp_path, api_keys=[API_KEY], chunk_size=10, partitions=1)
    )()
    with serving(settings) as initiator:
        batch_id = submit_batch(initiator.base_url, transactions=25)
        storage = initiator.app.state.services.storage
        assert rate_work_items(storage, settings, 2) == 2

        page = browser.new_page()
        page.goto(initiator.base_url)
        sign_in(page, API_KEY)
        row = page.locator(f'#batches tbody tr[data-key="{batch_id}"]')
        expect(row.locator("td.chunks span")).to_have_text(
            "0 / 0 / 3 (+2 rated)", timeout=APPEAR_MS
        )
        rated = row.locator(".progress .rated")
        assert rated.evaluate("part => part.style.width").startswith("66.6")
        expect(row.locator(".progress .applied")).to_have_attribute("style", "width: 0%;")


def test_a_wrong_key_shows_a_clear_message(served: str, browser: BrowserContext) -> None:
    page = browser.new_page()
    page.goto(served)
    sign_in(page, "not-the-key")
    error = page.locator("#key-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("The API key was not accepted")
    expect(page.locator("#board")).to_be_hidden()
    assert page.evaluate("sessionStorage.getItem('billing.apiKey')") is None
    page.screenshot(path=str(SCREENSHOT.with_stem(f"{SCREENSHOT.stem}-wrong-key")))

    sign_in(page, API_KEY)  # and the right key afterwards works
    expect(page.locator("#board")).to_be_visible()
    expect(error).to_be_hidden()


def test_an_unavailable_initiator_shows_a_retrying_message_then_recovers(
    served: str, browser: BrowserContext
) -> None:
    page = browser.new_page()
    # The browser answers the data requests itself, as an initiator whose storage is down.
    page.route("**/dashboard/live*", lambda route: route.fulfill(status=503, body="{}"))
    page.goto(served)
    sign_in(page, API_KEY)
    error = page.locator("#fetch-error")
    expect(error).to_contain_text("The initiator answered 503; retrying.")
    expect(page.locator("#sign-in")).to_be_hidden()  # not a key problem: no new prompt

    page.unroute("**/dashboard/live*")
    expect(error).to_be_hidden(timeout=APPEAR_MS)
    expect(page.locator("#batch-counts li")).to_have_count(7)  # one per batch status
