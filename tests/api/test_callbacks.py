"""``POST /batches?callback=``: a URL into the deployment's own network is refused before
the body is read; an allowed one is kept on the batch record (docs/events.md)."""

from __future__ import annotations

import pytest

from tests.api.batch_files import csv_file, rows
from tests.api.harness import CSV, Api, started_api
from tests.support.deployment_settings import SettingsFactory

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "callback",
    [
        "http://127.0.0.1:8080/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://[::1]/hook",
        "file:///etc/passwd",
        "http://user:secret@example.com/hook",
    ],
)
async def test_a_callback_into_a_private_network_is_refused_with_a_422(
    api: Api, callback: str
) -> None:
    before = api.trace()
    response = await api.client.post(
        "/batches", content=csv_file(rows(3)), headers=CSV, params={"callback": callback}
    )

    assert response.status_code == 422, response.text
    assert response.json()["title"] == "The callback URL is not allowed"
    assert api.trace() == before  # nothing was taken
    assert api.triggers() == []


async def test_a_callback_in_an_allowed_network_is_kept_on_the_batch_record(
    make_settings: SettingsFactory,
) -> None:
    settings = make_settings(callback_allowed_networks=["127.0.0.0/8"])
    callback = "http://127.0.0.1:9/hook"
    async with started_api(settings) as api:
        response = await api.client.post(
            "/batches", content=csv_file(rows(3)), headers=CSV, params={"callback": callback}
        )
        assert response.status_code == 202, response.text
        stored = api.services.records.find(response.json()["batch_id"])
    assert stored is not None
    assert stored.record.callback == callback
