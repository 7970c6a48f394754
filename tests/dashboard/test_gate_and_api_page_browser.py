"""In headless Chromium: the release gate on the dashboard, and the interactive API page.

The same deployment and browser as ``test_dashboard_browser.py`` (its fixtures): a batch
submitted while the gate is held shows as waiting for the release, and once released it
completes with its wait shown apart from its processing time; ``/docs`` lists every
operation from the OpenAPI document fetched with the key, and calls one.
"""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import BrowserContext, expect

from tests.dashboard.test_dashboard_browser import (
    API_KEY,
    APPEAR_MS,
    COMPLETE_MS,
    browser,
    served,
    sign_in,
    submit_batch,
)

__all__ = ["browser", "served"]  # the fixtures

AUTH = {"Authorization": f"Bearer {API_KEY}"}


def test_a_held_gate_shows_on_the_page_and_the_wait_apart_from_processing(
    served: str, browser: BrowserContext
) -> None:
    page = browser.new_page()
    page.goto(served)
    sign_in(page, API_KEY)
    gate = page.locator("#gate")
    expect(gate).to_have_text("gate released", timeout=APPEAR_MS)

    httpx.post(f"{served}/control/hold", headers=AUTH).raise_for_status()
    try:
        expect(gate).to_have_text(re.compile("^gate held"), timeout=APPEAR_MS)
        batch_id = submit_batch(served, transactions=25)
        row = page.locator(f'#batches tbody tr[data-key="{batch_id}"]')
        expect(row.locator("td.status")).to_have_text(
            "accepted · waiting for release", timeout=APPEAR_MS
        )
    finally:
        httpx.post(f"{served}/control/release", headers=AUTH).raise_for_status()

    expect(gate).to_have_text("gate released", timeout=APPEAR_MS)
    expect(row.locator("td.status")).to_have_text("completed", timeout=COMPLETE_MS)
    expect(row.locator("td").nth(7)).to_have_text(
        re.compile(r"^\d+\.\d s \+ \d+\.\d s waiting for release$")
    )


def test_the_api_page_lists_the_operations_and_calls_one(
    served: str, browser: BrowserContext
) -> None:
    page = browser.new_page()
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(f"{served}/docs")
    expect(page.get_by_label("API key")).to_be_visible()
    page.get_by_label("API key").fill(API_KEY)
    page.get_by_role("button", name="Show the API").click()

    document = httpx.get(
        f"{served}/openapi.json", headers={"Authorization": f"Bearer {API_KEY}"}
    ).json()
    operations = page.locator("details.operation")
    expect(operations).to_have_count(
        sum(len(methods) for methods in document["paths"].values()), timeout=APPEAR_MS
    )
    gate = page.locator("#getGate")
    expect(gate.locator("summary")).to_contain_text("Get the gate's state")
    gate.locator("summary").click()
    gate.get_by_role("button", name="Send").click()
    expect(gate.locator("pre.answer")).to_contain_text("200 application/json")
    expect(gate.locator("pre.answer")).to_contain_text('"released":true')
    assert failed == []  # the icon included: nothing on the page answers 404
