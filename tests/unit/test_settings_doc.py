"""Every setting has a tier and a one-line meaning, and docs/settings.md is what they generate."""

from __future__ import annotations

from shared.settings import TIERS, Settings
from shared.settings_doc import PAGE, render, tier_of


def test_every_setting_has_a_tier_and_a_one_line_description() -> None:
    missing = [
        name
        for name, field in Settings.model_fields.items()
        if tier_of(field) is None or not field.description or "\n" in field.description
    ]
    assert missing == [], f"give these settings a tier and a description: {missing}"


def test_the_connect_tier_is_the_few_a_deployment_sets() -> None:
    connect = [name for name, f in Settings.model_fields.items() if tier_of(f) == "connect"]
    assert "storage_account_url" in connect
    assert "warehouse_url" in connect
    assert len(connect) <= 10
    assert set(TIERS) == {tier_of(f) for f in Settings.model_fields.values()}


def test_docs_settings_md_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/settings.md is stale: run `python -m shared.settings_doc` and commit it"
    )


def test_the_page_names_every_setting_once() -> None:
    page = render()
    for name in Settings.model_fields:
        assert page.count(f"`BILLING_{name.upper()}`") == 1
