"""The meter's blob counts by container: read from the URL, kept per process, exported."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared import meter


@pytest.mark.parametrize(
    ("url", "container"),
    [
        ("https://acct.blob.core.windows.net/payloads/b/0001.json", "payloads"),
        ("https://acct.blob.core.windows.net/results?restype=container&comp=list", "results"),
        ("https://acct.privatelink.blob.core.windows.net/control/gate/state.json", "control"),
        ("https://acct.blob.core.windows.net/?restype=service&comp=userdelegationkey", ""),
        ("https://acct.blob.core.windows.net?comp=list", ""),
        ("http://127.0.0.1:10000/devstoreaccount1/incoming/u/x.csv", "incoming"),
        ("http://azurite:10000/devstoreaccount1/control?restype=container", "control"),
        ("http://127.0.0.1:10000/devstoreaccount1/?comp=list", ""),
        ("http://127.0.0.1:10000/devstoreaccount1?comp=list", ""),
    ],
)
def test_the_container_is_read_from_the_url(url: str, container: str) -> None:
    assert meter.container_of(url) == container


def test_only_blob_requests_are_counted_by_container() -> None:
    before = meter.container_snapshot()
    meter.record("blob", "get", container="payloads")
    meter.record("blob", "delegation-key")  # the service's own: the account
    meter.record("queue", "get")
    with meter.on_behalf_of("dashboard"):
        meter.record("blob", "list", 2, container="results")

    assert meter.diff(meter.container_snapshot(), before) == {
        ("blob.get", "payloads"): 1,
        ("blob.delegation-key", meter.ACCOUNT): 1,
        ("blob.list@dashboard", "results"): 2,
    }


def test_counts_by_container_are_exported_beside_the_counts_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(meter.EXPORT_DIR_ENV, str(tmp_path))
    meter.record("blob", "put", 3, container="control")
    meter.export_now()

    by_kind = meter.collect_exports(tmp_path)
    by_container = meter.collect_container_exports(tmp_path)
    assert by_kind["blob.put"] >= 3
    assert by_container[("blob.put", "control")] >= 3
    assert set(by_kind) >= {kind for kind, _ in by_container}
    # A second process's export adds to the sums.
    (tmp_path / meter.CONTAINERS_SUBDIR / "1.json").write_text('{"blob.put": {"control": 2}}')
    later = meter.collect_container_exports(tmp_path)
    assert later[("blob.put", "control")] == by_container[("blob.put", "control")] + 2
